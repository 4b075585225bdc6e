// A small C++/CUDA tokenizer and top-level item splitter for candidates' cuda_sources, enough to
// tell kernels from host code (split_sources.h) without a compiler: it knows comments, string
// and character literals (with prefixes and raw strings), preprocessor lines (with backslash
// continuations) and bracket nesting, so a brace or a "<<<" inside a comment or a string never
// counts. It does not expand macros: callers treat anything it cannot see through as "does not
// apply" and leave the source to the ordinary compile.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "common/status.h"

namespace dice {

struct CudaToken {
  enum Kind { kIdentifier, kNumber, kLiteral, kPunct, kDirective };
  Kind kind;
  size_t begin = 0;  // byte offsets into the source: [begin, end)
  size_t end = 0;
  int line = 1;      // 1-based line of `begin`
  std::string text;  // the token's spelling; a directive's whole logical line
};

// Punctuation is one character, except "::", "->", "<<<" and ">>>" (the launch brackets).
// Fails (kInvalidArgument) on an unterminated comment or literal.
Result<std::vector<CudaToken>> tokenize_cuda(const std::string& source);

// One top-level declaration, definition or preprocessor line: tokens [first, last) of the token
// list, `depth0` the indices (into that list) of its tokens outside any bracket.
struct TopLevelItem {
  size_t first = 0;
  size_t last = 0;
  bool directive = false;  // a preprocessor line at file level
  bool has_body = false;   // ends with a {...} that is not an initializer or class body (a
                           // function, namespace or extern "C" block)
  size_t body_open = 0;    // index of that body's "{" when has_body
};

// Splits tokens into top-level items: an item ends at a ";" outside brackets, or at the "}"
// closing a function/namespace body (a class body or initializer runs on to its ";"). Fails on
// unbalanced brackets or a last item without its end.
Result<std::vector<TopLevelItem>> split_top_level(const std::vector<CudaToken>& tokens);

// The directive's name: "include" for "#  include <x>", "" for a null directive.
std::string directive_name(const CudaToken& directive);

}  // namespace dice
