// The tokens of a Python file, as far as the infilling split needs them (infill_split.h): where
// each string literal starts and ends, which names and operators lie outside strings and
// comments, how deep in brackets each token is, and which tokens start a statement. Not a full
// Python tokenizer: numbers are read loosely, indentation is not tracked, and f-string fields
// are part of their string; but strings, comments, line continuations and brackets are read as
// Python reads them, so that a `load_inline(` inside a string or a comment is never taken for
// a call, and the end of a string is the byte where Python ends it.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace dice::data {

enum class PyTokenKind {
  kName,    // identifier or keyword
  kNumber,  // a numeric literal (read loosely: digits, letters, '_', '.')
  kString,  // a string or bytes literal with its prefix and quotes: r"""...""", 'x', f"{a}"
  kOp,      // an operator or delimiter: "(", "=", "+=", ",", "."...
};

struct PyToken {
  PyTokenKind kind = PyTokenKind::kOp;
  std::string text;       // the token's bytes, quotes included
  std::size_t begin = 0;  // byte offsets in the source: [begin, end)
  std::size_t end = 0;
  int line = 1;  // 1-based line of the first byte
  // Brackets open around the token; an opening bracket counts itself out, its closing one too:
  // in `f(a)`, "f", "(" and ")" are at depth 0 and "a" at depth 1.
  int depth = 0;
  // The first token of a logical line (after a newline outside brackets and continuations).
  bool starts_statement = false;
  bool at_column_zero = false;  // its line holds nothing before it (not indented)
};

// The tokens of `source`, comments left out. InvalidArgument "<where>:N: why" for a string that
// never ends (N: the line it opens on), a closing bracket that closes nothing or another
// bracket, and a bracket still open at the end of the file (N: the line it opens on).
Result<std::vector<PyToken>> tokenize_python(std::string_view source, const std::string& where);

}  // namespace dice::data
