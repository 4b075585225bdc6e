#include "tools/dice-data/infill_split.h"

#include <algorithm>
#include <vector>

#include "model/tokenizer/unicode.h"
#include "tools/dice-data/python_tokens.h"

namespace dice::data {
namespace {

using Tokens = std::vector<PyToken>;

// A token range [begin, end) of `tokens`.
struct Span {
  std::size_t begin = 0;
  std::size_t end = 0;
};

Status error(const std::string& where, int line, const std::string& why) {
  return Status::invalid_argument(where + ":" + std::to_string(line) + ": " + why);
}

bool is_op(const Tokens& t, std::size_t i, const char* text) {
  return i < t.size() && t[i].kind == PyTokenKind::kOp && t[i].text == text;
}

bool is_name(const Tokens& t, std::size_t i, const char* text) {
  return i < t.size() && t[i].kind == PyTokenKind::kName && t[i].text == text;
}

bool top_level_statement(const PyToken& t) {
  return t.starts_statement && t.at_column_zero;
}

// "=", "+=", "//=", ...: the operators that bind a name (not "==", "<=", ">=", "!=").
bool is_assignment_op(const PyToken& t) {
  if (t.kind != PyTokenKind::kOp || t.text.empty() || t.text.back() != '=') return false;
  return t.text != "==" && t.text != "<=" && t.text != ">=" && t.text != "!=";
}

// The source text of tokens [span), shortened for a message.
std::string quote(std::string_view source, const Tokens& t, Span s) {
  if (s.begin >= s.end) return "";
  std::string text(source.substr(t[s.begin].begin, t[s.end - 1].end - t[s.begin].begin));
  constexpr std::size_t kMax = 60;
  if (text.size() > kMax) text = text.substr(0, kMax) + "...";
  std::replace(text.begin(), text.end(), '\n', ' ');
  return text;
}

std::string line_list(const std::vector<int>& lines) {
  std::string s;
  for (std::size_t i = 0; i < lines.size(); ++i) s += (i ? ", " : "") + std::to_string(lines[i]);
  return s;
}

// The arguments of the call whose "(" is tokens[open], one span per comma-separated argument.
std::vector<Span> call_arguments(const Tokens& t, std::size_t open) {
  const int inside = t[open].depth + 1;
  std::vector<Span> args;
  std::size_t start = open + 1;
  std::size_t i = open + 1;
  for (; i < t.size() && t[i].depth >= inside; ++i)
    if (t[i].depth == inside && is_op(t, i, ",")) {
      if (i > start) args.push_back({start, i});
      start = i + 1;
    }
  if (i > start) args.push_back({start, i});  // i: the closing ")"
  return args;
}

// Where cuda_sources is among load_inline(name, cpp_sources, cuda_sources, functions, ...).
constexpr std::size_t kCudaSourcesPosition = 2;

// The value of load_inline's cuda_sources, or an empty span when the call has none.
Span cuda_sources_value(const Tokens& t, const std::vector<Span>& args) {
  std::size_t position = 0;
  for (const Span& a : args) {
    const bool keyword = t[a.begin].kind == PyTokenKind::kName && is_op(t, a.begin + 1, "=");
    if (keyword && t[a.begin].text == "cuda_sources") return {a.begin + 2, a.end};
    const bool unpacked = is_op(t, a.begin, "*") || is_op(t, a.begin, "**");
    if (!keyword && !unpacked && position++ == kCudaSourcesPosition) return a;
  }
  return {};
}

// The variables a cuda_sources value names: `source`, `[source]`, `(source,)`, `[a, b]`; empty
// when the value is anything else (a string, a call, an expression).
std::vector<std::string> variables_of(const Tokens& t, Span v) {
  std::size_t b = v.begin, e = v.end;
  const bool list = e - b >= 2 && ((is_op(t, b, "[") && is_op(t, e - 1, "]")) ||
                                   (is_op(t, b, "(") && is_op(t, e - 1, ")")));
  if (list) ++b, --e;
  std::vector<std::string> names;
  for (std::size_t i = b; i < e; i += 2) {
    const bool name = t[i].kind == PyTokenKind::kName && t[i].text != "None" &&
                      t[i].text != "True" && t[i].text != "False";
    if (!name || (i + 1 < e && !is_op(t, i + 1, ","))) return {};
    if (!list && i + 1 < e) return {};
    names.push_back(t[i].text);
  }
  return names;
}

// The line of the first invalid UTF-8 byte, or 0. A line break is never part of a multi-byte
// sequence, so checking line by line finds exactly what checking the whole text would.
int first_non_utf8_line(std::string_view text) {
  int line = 1;
  for (std::size_t at = 0; at <= text.size(); ++line) {
    std::size_t nl = text.find('\n', at);
    if (nl == std::string_view::npos) nl = text.size();
    if (!tokenizer::is_valid_utf8(text.substr(at, nl - at))) return line;
    at = nl + 1;
  }
  return 0;
}

// The index of the one load_inline(...) call ("torch.utils.cpp_extension.load_inline(" too).
Result<std::size_t> load_inline_call(const Tokens& t, const std::string& where) {
  std::vector<std::size_t> calls;
  for (std::size_t i = 0; i + 1 < t.size(); ++i)
    if (is_name(t, i, "load_inline") && is_op(t, i + 1, "(") &&
        (i == 0 || !is_name(t, i - 1, "def")))
      calls.push_back(i);
  if (calls.empty()) {
    return Status::invalid_argument(where +
                                    ": no load_inline(...) call: the split needs the CUDA "
                                    "source that load_inline compiles");
  }
  if (calls.size() > 1) {
    std::vector<int> lines;
    for (std::size_t c : calls) lines.push_back(t[c].line);
    return error(where, lines[1],
                 std::to_string(calls.size()) + " load_inline(...) calls (lines " +
                     line_list(lines) +
                     "): the split takes one CUDA source and cannot tell which is the core");
  }
  return calls[0];
}

// The one variable the call at t[call] takes as cuda_sources.
Result<std::string> source_variable(std::string_view text, const Tokens& t, std::size_t call,
                                    const std::string& where) {
  const Span value = cuda_sources_value(t, call_arguments(t, call + 1));
  if (value.begin == value.end)
    return error(where, t[call].line, "load_inline(...) has no cuda_sources argument");
  const std::string written = quote(text, t, value);
  if (t[value.begin].kind == PyTokenKind::kString) {
    return error(where, t[value.begin].line,
                 "the CUDA source is written inside load_inline(...) (cuda_sources=" + written +
                     "): the split needs it assigned to a variable before the call");
  }
  const std::vector<std::string> names = variables_of(t, value);
  if (names.size() != 1) {
    return error(where, t[value.begin].line,
                 "cuda_sources=" + written +
                     (names.empty() ? " is not a variable" : " names several strings") +
                     ": cannot tell which string is the core");
  }
  return names[0];
}

// The statement that assigns `variable` its string: its one top-level assignment before the
// call, whose value is string literals only (in parentheses or not).
Result<Span> source_assignment(std::string_view text, const Tokens& t, std::size_t call,
                               const std::string& variable, const std::string& where) {
  std::vector<std::size_t> assignments;
  for (std::size_t i = 0; i + 1 < call; ++i)
    if (top_level_statement(t[i]) && is_name(t, i, variable.c_str()) && is_assignment_op(t[i + 1]))
      assignments.push_back(i);
  if (assignments.empty()) {
    return error(where, t[call].line,
                 "cuda_sources=" + variable + ", but no top-level assignment " + variable +
                     " = \"...\" comes before load_inline: no CUDA source string to split at");
  }
  if (assignments.size() > 1) {
    std::vector<int> lines;
    for (std::size_t a : assignments) lines.push_back(t[a].line);
    return error(where, lines[1],
                 variable + " is assigned " + std::to_string(lines.size()) +
                     " times before load_inline (lines " + line_list(lines) +
                     "): cannot tell which string is the core");
  }
  const std::size_t at = assignments[0];
  if (t[at + 1].text != "=") {
    return error(where, t[at].line,
                 variable + " " + t[at + 1].text +
                     " ... is not a plain assignment: the split takes the CUDA source as written");
  }
  std::size_t end = at + 2;  // past the statement: the next statement's first token
  while (end < t.size() && !t[end].starts_statement) ++end;
  Span strings{at + 2, end};
  if (strings.end - strings.begin >= 2 && is_op(t, strings.begin, "(") &&
      is_op(t, strings.end - 1, ")"))
    ++strings.begin, --strings.end;  // source = ("..." "...")
  const bool all_strings =
      strings.begin < strings.end &&
      std::all_of(t.begin() + static_cast<std::ptrdiff_t>(strings.begin),
                  t.begin() + static_cast<std::ptrdiff_t>(strings.end),
                  [](const PyToken& s) { return s.kind == PyTokenKind::kString; });
  if (!all_strings) {
    return error(where, t[at].line,
                 variable + " = " + quote(text, t, {at + 2, end}) +
                     " is not a string literal: the split takes the CUDA source as written");
  }
  return Span{at, end};
}

bool model_new_after(const Tokens& t, std::size_t from) {
  for (std::size_t i = from; i + 1 < t.size(); ++i)
    if (top_level_statement(t[i]) && is_name(t, i, "class") && is_name(t, i + 1, "ModelNew"))
      return true;
  return false;
}

}  // namespace

Result<InfillSplit> split_infill(std::string_view text, const std::string& where) {
  if (text.find_first_not_of(" \t\r\n\f") == std::string_view::npos)
    return Status::invalid_argument(where + ": empty file: there is no candidate to split");
  if (const int line = first_non_utf8_line(text))
    return error(where, line, "not UTF-8 text (a candidate is a Python file)");
  DICE_ASSIGN_OR_RETURN(const Tokens t, tokenize_python(text, where));
  DICE_ASSIGN_OR_RETURN(const std::size_t call, load_inline_call(t, where));
  DICE_ASSIGN_OR_RETURN(const std::string variable, source_variable(text, t, call, where));
  DICE_ASSIGN_OR_RETURN(const Span statement, source_assignment(text, t, call, variable, where));

  InfillSplit split;
  split.variable = variable;
  const std::size_t middle_begin = t[statement.begin].begin;  // at column 0: a line's start
  const std::size_t middle_end = t[statement.end - 1].end;    // past the closing quotes
  split.prefix = std::string(text.substr(0, middle_begin));
  split.middle = std::string(text.substr(middle_begin, middle_end - middle_begin));
  split.suffix = std::string(text.substr(middle_end));
  split.first_line = t[statement.begin].line;
  split.last_line = split.first_line +
                    static_cast<int>(std::count(split.middle.begin(), split.middle.end(), '\n'));
  if (!model_new_after(t, statement.end)) {
    return error(where, split.last_line,
                 "no top-level class ModelNew after the CUDA source: not a KernelBench candidate");
  }
  // The split is cut out of the text, so this holds by construction; it is checked because
  // every later use (training prompts, the reward's splice) relies on it.
  if (split.prefix + split.middle + split.suffix != text)
    return Status::internal(where + ": prefix + middle + suffix differs from the file");
  return split;
}

}  // namespace dice::data
