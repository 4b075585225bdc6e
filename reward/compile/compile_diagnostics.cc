#include "reward/compile/compile_diagnostics.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <vector>

#include "reward/compile/compile_log.h"
#include "reward/compile/cuda_tokens.h"

namespace dice {
namespace {

// The #line names binding.h gives the candidate's text (split_sources.h keeps them).
constexpr char kCudaFile[] = "cuda_sources";
constexpr char kCppFile[] = "cpp_sources";

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

bool starts_with(const std::string& s, const std::string& prefix) {
  return s.compare(0, prefix.size(), prefix) == 0;
}

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

// gcc quotes with U+2018/U+2019 under a UTF-8 locale and with ' otherwise.
std::string plain_quotes(std::string text) {
  for (const char* curly : {"\xe2\x80\x98", "\xe2\x80\x99"}) {
    for (size_t at; (at = text.find(curly)) != std::string::npos;) text.replace(at, 3, "'");
  }
  return text;
}

// The strings between `quote` pairs of a message, in order.
std::vector<std::string> quoted(const std::string& message, char quote) {
  std::vector<std::string> out;
  for (size_t open = message.find(quote); open != std::string::npos;) {
    const size_t close = message.find(quote, open + 1);
    if (close == std::string::npos) break;
    out.push_back(message.substr(open + 1, close - open - 1));
    open = message.find(quote, close + 1);
  }
  return out;
}

bool is_identifier_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
}

// A type spelled only with built-in words ("const float *", "long unsigned int", "int*&"):
// no header declares or changes it.
bool builtin_type(const std::string& type) {
  static const std::set<std::string> kQualifiers = {"const", "volatile", "signed",      "unsigned",
                                                    "long",  "short",    "__restrict__"};
  static const std::set<std::string> kBuiltin = {"int", "char", "float", "double", "bool", "void"};
  std::string word;
  std::vector<std::string> words;
  for (char c : type + " ") {
    if (is_identifier_char(c)) {
      word += c;
      continue;
    }
    if (!word.empty()) words.push_back(word);
    word.clear();
    if (!std::isspace(static_cast<unsigned char>(c)) && c != '*' && c != '&' && c != '[' &&
        c != ']' && !std::isdigit(static_cast<unsigned char>(c))) {
      return false;  // ::, <, (: a declared type, template or function type
    }
  }
  bool base = false;
  for (const auto& w : words) {
    if (std::isdigit(static_cast<unsigned char>(w[0])) || kQualifiers.count(w) != 0) continue;
    if (kBuiltin.count(w) == 0) return false;
    base = true;
  }
  return base || !words.empty();  // "unsigned", "long" alone are int
}

// Strips gcc's "struct "/"class "/"union " from a quoted type.
std::string class_name(std::string type) {
  for (const char* tag : {"struct ", "class ", "union "}) {
    if (starts_with(type, tag)) type = type.substr(std::string(tag).size());
  }
  return type;
}

// What the candidate's own text declares and defines, read without a compiler (over- and
// under-approximations both only move a verdict towards "retry", see own_name()).
struct CandidateText {
  std::vector<std::string> cuda_lines, cpp_lines;
  std::set<std::string> declared;     // functions, variables, parameters, types, namespaces, macros
  std::set<std::string> classes;      // struct/class/union names it defines (a body or a base list)
  std::set<std::string> macros;       // #define'd names
  std::vector<std::string> includes;  // what its #includes spell: "torch/extension.h", "vector"
  bool pastes = false;                // a #define of its pastes tokens (##)
  std::map<std::string, int> spelled;  // how often each identifier occurs outside comments
  bool tokenized = true;               // false: a source did not tokenize, nothing is counted
  std::string unsafe;                  // why no error may decide here; empty if none

  const std::vector<std::string>* lines(const std::string& file) const {
    if (file == kCudaFile) return &cuda_lines;
    if (file == kCppFile) return &cpp_lines;
    return nullptr;
  }
  std::string line(const std::string& file, int number) const {
    const auto* l = lines(file);
    return l == nullptr || number < 1 || number > static_cast<int>(l->size()) ? ""
                                                                              : (*l)[number - 1];
  }
};

// ALL_CAPS (with a letter) or __name__: how macros are spelled.
bool macro_shaped(const std::string& word) {
  if (word.size() >= 5 && word.compare(0, 2, "__") == 0 &&
      word.compare(word.size() - 2, 2, "__") == 0)
    return true;
  bool letter = false;
  for (char c : word) {
    if (std::islower(static_cast<unsigned char>(c))) return false;
    letter |= std::isupper(static_cast<unsigned char>(c)) != 0;
  }
  return letter && word.size() >= 2;
}

// Identifiers before which a following identifier is not declared by this pair
// (`return x;`, `case X:`, `new T(`, `public Base {`).
bool declares_next(const std::string& word) {
  static const std::set<std::string> kNot = {
      "return",    "else",          "case",      "goto",      "throw",    "new",
      "delete",    "sizeof",        "co_return", "co_yield",  "co_await", "do",
      "operator",  "public",        "private",   "protected", "virtual",  "using",
      "namespace", "typedef",       "template",  "friend",    "default",  "alignof",
      "decltype",  "static_assert", "if",        "while",     "for",      "switch",
      "catch",     "and",           "or",        "not",       "xor"};
  return kNot.count(word) == 0;
}

void collect_declarations(const std::string& source, CandidateText* text) {
  Result<std::vector<CudaToken>> tokenized = tokenize_cuda(source);
  if (!tokenized.ok()) {  // an unterminated literal: no names known, nothing own
    text->tokenized = false;
    return;
  }
  const std::vector<CudaToken>& t = tokenized.value();
  for (const CudaToken& token : t) {
    if (token.kind == CudaToken::kIdentifier) ++text->spelled[token.text];
  }
  auto ident = [&](size_t i) { return i < t.size() && t[i].kind == CudaToken::kIdentifier; };
  auto is = [&](size_t i, const char* s) { return i < t.size() && t[i].text == s; };
  static const std::set<std::string> kTypeWords = {
      "int",  "char",  "float",  "double",   "bool",     "void",         "long",   "short",
      "auto", "const", "signed", "unsigned", "volatile", "__restrict__", "size_t", "half"};
  for (size_t i = 0; i < t.size(); ++i) {
    if (t[i].kind == CudaToken::kDirective) {
      static const std::regex kInclude(R"(^\s*#\s*include\s*[<"]([^>"]+)[>"])");
      std::smatch included;
      if (std::regex_search(t[i].text, included, kInclude)) text->includes.push_back(included[1]);
      if (directive_name(t[i]) != "define") continue;
      if (t[i].text.find("##") != std::string::npos) text->pastes = true;
      static const std::regex kDefine(R"(^\s*#\s*define\s+([A-Za-z_]\w*))");
      std::smatch m;
      if (std::regex_search(t[i].text, m, kDefine)) {
        text->macros.insert(m[1].str());
        text->declared.insert(m[1].str());
      }
      continue;
    }
    if (!ident(i)) continue;
    const std::string& w = t[i].text;
    if (w == "namespace" && i > 0 && is(i - 1, "using")) continue;  // names someone else's
    if ((w == "struct" || w == "class" || w == "union" || w == "enum" || w == "namespace") &&
        ident(i + 1)) {
      size_t name = i + 1;
      if (w == "enum" && (is(name, "class") || is(name, "struct"))) ++name;
      if (ident(name)) {
        text->declared.insert(t[name].text);
        // Only a class it defines: a forward declaration or `struct X x` may name a header's.
        if (w != "namespace" && w != "enum" &&
            (is(name + 1, "{") || is(name + 1, ":") || is(name + 1, "final"))) {
          text->classes.insert(t[name].text);
        }
      }
      continue;
    }
    // Aliases are declared names but not classes: their members are whatever they stand for.
    if (w == "using" && ident(i + 1) && is(i + 2, "=")) {
      text->declared.insert(t[i + 1].text);
      continue;
    }
    if (w == "typedef") {
      size_t end = i + 1;
      while (end < t.size() && !is(end, ";")) ++end;
      if (end < t.size() && ident(end - 1)) text->declared.insert(t[end - 1].text);
      continue;
    }
    // A declarator: `float x =`, `__global__ void k(`, `const float* p,`, `Pair p{`.
    if (i == 0 || !(is(i + 1, "(") || is(i + 1, "=") || is(i + 1, ";") || is(i + 1, ",") ||
                    is(i + 1, "[") || is(i + 1, "{") || is(i + 1, ")") || is(i + 1, ":"))) {
      continue;
    }
    size_t before = i - 1;
    while (before > 0 && (is(before, "*") || is(before, "&"))) --before;
    const bool pointer = before != i - 1;
    if (!ident(before) || !declares_next(t[before].text)) continue;
    if (before > 0 && (is(before - 1, ".") || is(before - 1, "->"))) continue;
    // `a * b)` is an expression: behind * or &, only a type word counts as a type.
    if (pointer && kTypeWords.count(t[before].text) == 0 &&
        text->classes.count(t[before].text) == 0)
      continue;
    // `void C10_LAUNCH_BOUNDS_1(256) k(` looks like a function's declaration and is a macro.
    if (is(i + 1, "(") && macro_shaped(w)) continue;
    text->declared.insert(w);
  }
}

// Macros of the compilers and of CUDA's headers, the same in every tier.
const std::set<std::string>& compiler_macros() {
  static const std::set<std::string> kCompiler = {"defined",
                                                  "__CUDA_ARCH__",
                                                  "__CUDACC__",
                                                  "__NVCC__",
                                                  "__cplusplus",
                                                  "__CUDACC_VER_MAJOR__",
                                                  "__CUDACC_VER_MINOR__",
                                                  "CUDART_VERSION",
                                                  "CUDA_VERSION",
                                                  "__CUDACC_RTC__",
                                                  "__GNUC__",
                                                  "__FILE__",
                                                  "__LINE__",
                                                  "__func__"};
  return kCompiler;
}

// Macros a heavier tier may define: a conditional on one of them (other than the candidate's own
// and the compiler's) may compile differently there.
std::string unsafe_conditional(const std::vector<std::string>& lines,
                               const std::set<std::string>& macros) {
  static const std::regex kConditional(R"(^\s*#\s*(if|ifdef|ifndef|elif)\b(.*)$)");
  static const std::regex kWord(R"([A-Za-z_]\w*)");
  const std::set<std::string>& compiler = compiler_macros();
  for (const auto& line : lines) {
    std::smatch m;
    if (!std::regex_search(line, m, kConditional)) continue;
    const std::string rest = m[2].str();
    for (std::sregex_iterator it(rest.begin(), rest.end(), kWord), end; it != end; ++it) {
      const std::string word = it->str();
      if (compiler.count(word) == 0 && macros.count(word) == 0) {
        return "a preprocessor conditional on " + word;
      }
    }
  }
  return "";
}

// A torch/c10 macro spelled without "(": in a declaration (C10_HOST_DEVICE, TORCH_API) its
// absence gives syntax errors and no lookup error.
std::string bare_torch_macro(const std::string& source, const std::set<std::string>& macros) {
  static const std::regex kMacro(
      R"(\b((?:TORCH|AT|C10|CAFFE2|PYBIND11|CUDA)_[A-Z0-9_]+)\b(\s*\()?)");
  for (std::sregex_iterator it(source.begin(), source.end(), kMacro), end; it != end; ++it) {
    const std::string name = (*it)[1].str();
    // Defined by the compile's own flags (-DTORCH_EXTENSION_NAME) or CUDA's headers, in every tier.
    if ((*it)[2].matched || macros.count(name) != 0 || name == "TORCH_EXTENSION_NAME" ||
        name == "CUDA_VERSION")
      continue;
    return "macro " + name + " used without arguments";
  }
  return "";
}

// Where the candidate's brackets ((), [], {}) do not pair up outside comments, literals and
// directives ("cuda_sources:12"), or empty: no declaration anywhere makes such a text compile.
// Unless a #define of the candidate's holds an unpaired bracket (its uses add one the text does
// not show): then empty as well.
std::string unpaired_bracket(const std::string& source, const char* file) {
  Result<std::vector<CudaToken>> tokenized = tokenize_cuda(source);
  if (!tokenized.ok()) return "";
  std::vector<const CudaToken*> open;
  for (const CudaToken& t : tokenized.value()) {
    if (t.kind == CudaToken::kDirective) {
      if (directive_name(t) != "define") continue;
      int depth = 0;
      for (char c : t.text)
        depth += (c == '(' || c == '[' || c == '{') - (c == ')' || c == ']' || c == '}');
      if (depth != 0) return "";
      continue;
    }
    if (t.kind != CudaToken::kPunct || t.text.size() != 1) continue;
    const char c = t.text[0];
    if (c == '(' || c == '[' || c == '{') {
      open.push_back(&t);
      continue;
    }
    if (c != ')' && c != ']' && c != '}') continue;
    const char expected = c == ')' ? '(' : c == ']' ? '[' : '{';
    if (open.empty() || open.back()->text[0] != expected) {  // where the unclosed one opened
      return std::string(file) + ":" + std::to_string(open.empty() ? t.line : open.back()->line);
    }
    open.pop_back();
  }
  return open.empty() ? "" : std::string(file) + ":" + std::to_string(open.back()->line);
}

CandidateText read_candidate(const ExtensionSources& ext) {
  CandidateText text;
  text.cuda_lines = lines_of(ext.cuda_sources);
  text.cpp_lines = lines_of(ext.cpp_sources);
  collect_declarations(ext.cuda_sources, &text);
  collect_declarations(ext.cpp_sources, &text);
  for (const auto* lines : {&text.cuda_lines, &text.cpp_lines}) {
    if (text.unsafe.empty()) text.unsafe = unsafe_conditional(*lines, text.macros);
  }
  for (const auto* source : {&ext.cuda_sources, &ext.cpp_sources}) {
    if (text.unsafe.empty()) text.unsafe = bare_torch_macro(*source, text.macros);
  }
  return text;
}

// One diagnostic of the output: an error with the notes and quoted lines that follow it.
struct Diagnostic {
  std::string path;  // empty: the output names no place (ptxas, the driver)
  int line = 0;
  std::string message;              // after "error: "
  std::vector<std::string> quoted;  // the indented lines after it (EDG: source, caret)
  std::vector<DiagnosticLocation> note_at;
  std::vector<std::string> notes;
};

// "error: ", "error #20-D: ", "fatal error: ", "catastrophic error: ": the message after it.
std::optional<std::string> error_message(const std::string& text) {
  for (const char* kind : {"error", "fatal error", "catastrophic error"}) {
    if (!starts_with(text, kind)) continue;
    const size_t colon = text.find(": ");
    if (colon == std::string::npos || colon > 30) continue;
    const std::string tag = text.substr(std::string(kind).size(), colon - std::string(kind).size());
    if (!tag.empty() && tag[0] != ' ') continue;  // "errors detected..." is a summary
    return text.substr(colon + 2);
  }
  return std::nullopt;
}

bool summary_line(const std::string& line) {
  std::string lower;
  for (char c : line)
    lower.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  return contains(lower, "detected in the compilation of") ||
         contains(lower, "error limit reached") || contains(lower, "compilation terminated") ||
         !contains(lower, "error");
}

std::vector<Diagnostic> errors_of(const std::string& output) {
  std::vector<Diagnostic> errors;
  bool in_error = false;  // indented lines and notes belong to the last error
  for (const std::string& line : lines_of(plain_quotes(output))) {
    if (line.empty()) continue;
    if (line[0] == ' ' || line[0] == '\t') {
      if (in_error) errors.back().quoted.push_back(line);
      continue;
    }
    if (starts_with(line, "In file included from ")) continue;
    const std::optional<DiagnosticLocation> at = diagnostic_location(line);
    if (!at) {
      in_error = false;
      if (summary_line(line) || starts_with(line, "Remark")) continue;
      errors.push_back(Diagnostic{"", 0, line, {}, {}, {}});  // a driver's or ptxas's error
      continue;
    }
    const std::string text = line.substr(at->message_at);
    if (std::optional<std::string> message = error_message(text)) {
      errors.push_back(Diagnostic{at->path, at->line, *message, {}, {}, {}});
      in_error = true;
      continue;
    }
    if (in_error && starts_with(text, "note")) {
      const size_t colon = text.find(": ");
      errors.back().note_at.push_back(*at);
      errors.back().notes.push_back(colon == std::string::npos ? text : text.substr(colon + 2));
      continue;
    }
    in_error = false;  // a warning, "In function", "required from here"
  }
  return errors;
}

// ALL_CAPS names and __names__ that a tier's headers may define: near a syntax error, one that
// the candidate does not define may be why the tokens do not parse.
bool unknown_macro_like(const std::string& word, const CandidateText& text,
                        DiagnosticsCompiler compiler) {
  if (text.declared.count(word) != 0 || compiler_macros().count(word) != 0) return false;
  static const std::set<std::string> kExpressionMacros = {
      "NULL",        "FLT_MAX",  "FLT_MIN", "FLT_EPSILON", "DBL_MAX",  "DBL_MIN",
      "DBL_EPSILON", "INT_MAX",  "INT_MIN", "UINT_MAX",    "LONG_MAX", "LLONG_MAX",
      "SIZE_MAX",    "CHAR_BIT", "M_PI",    "INFINITY",    "NAN",      "EOF"};
  static const std::set<std::string> kCxxKeywords = {
      "__restrict__", "__attribute__", "__inline__", "__extension__", "__typeof__",
      "__asm__",      "__volatile__",  "__const__",  "__signed__",    "__alignof__"};
  static const std::set<std::string> kCudaKeywords = {
      "__global__",        "__device__",  "__host__",          "__shared__",
      "__constant__",      "__managed__", "__forceinline__",   "__noinline__",
      "__launch_bounds__", "__align__",   "__grid_constant__", "__cluster_dims__"};
  if (!macro_shaped(word) || kExpressionMacros.count(word) != 0) return false;  // __ldg, idx
  if (kCxxKeywords.count(word) != 0) return false;
  return !(compiler == DiagnosticsCompiler::kNvcc && kCudaKeywords.count(word) != 0);
}

// Why a syntax error at `error` might not be the candidate's own (empty: it is).
std::string syntax_doubt(const Diagnostic& error, const CandidateText& text, DiagnosticsScope scope,
                         DiagnosticsCompiler compiler) {
  static const std::regex kWord(R"([A-Za-z_]\w*)");
  if (scope == DiagnosticsScope::kSplit) {
    // The split writes its own text at a kernel's line (the launch stubs) and in place of a
    // launch: an error there may be in that text, unless it is before the stub's call.
    const std::string source = text.line(error.path, error.line);
    const bool generated_here = contains(source, "<<<") || contains(source, "__global__");
    for (const auto& q : error.quoted) {
      if (contains(q, "dice_split_")) return "the split's own text is quoted";
    }
    if (generated_here && !contains(error.message, "before 'dice_split_launch_")) {
      return "the split rewrote line " + std::to_string(error.line);
    }
  }
  for (int n = std::max(1, error.line - 2); n <= error.line; ++n) {
    const std::string source = text.line(error.path, n);
    for (std::sregex_iterator it(source.begin(), source.end(), kWord), end; it != end; ++it) {
      if (unknown_macro_like(it->str(), text, compiler)) {
        return it->str() + " on line " + std::to_string(n) + " may be a macro of heavier headers";
      }
    }
  }
  return "";
}

bool syntax_error(const std::string& m) {
  // gcc's sign of an unknown macro call at namespace scope (FOO(x);), which no lookup error
  // comes with: never the candidate's alone.
  if (starts_with(m, "expected constructor, destructor, or type conversion")) return false;
  for (const char* s :
       {"expected ", "stray ", "missing terminating", "unterminated ", "unrecognized token",
        "missing closing quote", "invalid combination of type specifiers"}) {
    if (starts_with(m, s)) return true;
  }
  return false;
}

bool in_candidate_file(const std::string& path) {
  return path == kCudaFile || path == kCppFile;
}

// The function an EDG "too many/few arguments in function call" points at: the name before the
// "(" (or "<<<") that encloses the caret in the quoted source line; empty if unclear.
std::string callee_at_caret(const Diagnostic& error) {
  if (error.quoted.size() < 2) return "";
  const std::string& source = error.quoted[0];
  const size_t caret = error.quoted[1].find('^');
  if (caret == std::string::npos || caret > source.size()) return "";
  int depth = 0;
  size_t i = caret;
  while (i > 0) {
    const char c = source[--i];
    if (c == ')') ++depth;
    if (c == '(' && depth-- == 0) break;
    if (i == 0) return "";
  }
  auto skip_space = [&] {
    while (i > 0 && std::isspace(static_cast<unsigned char>(source[i - 1]))) --i;
  };
  skip_space();
  if (i >= 3 && source.compare(i - 3, 3, ">>>") == 0) {  // a launch: the kernel before <<<
    const size_t open = source.rfind("<<<", i - 3);
    if (open == std::string::npos) return "";
    i = open;
    skip_space();
  }
  size_t start = i;
  while (start > 0 && is_identifier_char(source[start - 1])) --start;
  if (start == i) return "";
  size_t before = start;
  while (before > 0 && std::isspace(static_cast<unsigned char>(source[before - 1]))) --before;
  if (before > 0 &&
      (source[before - 1] == '.' || source[before - 1] == '>' || source[before - 1] == ':')) {
    return "";  // a member or qualified call: its overloads are not the candidate's to know
  }
  return source.substr(start, i - start);
}

// Whether a note after a gcc error points into the candidate's text ("declared here",
// "previously defined here").
bool note_in_candidate(const Diagnostic& error, const char* says) {
  for (size_t i = 0; i < error.notes.size(); ++i) {
    if (contains(error.notes[i], says)) return in_candidate_file(error.note_at[i].path);
  }
  return false;
}

// The class of an error that is the candidate's own in either scope, or empty: the split never
// writes a definition twice into one file (split_sources.h), and a built-in type has no members
// whichever headers are there.
std::string split_safe_class(const Diagnostic& e) {
  const std::string& m = e.message;
  const std::vector<std::string> edg = quoted(m, '"');
  const std::vector<std::string> gcc = quoted(m, '\'');
  // A number the lexer cannot read (`0..f`, `1.5.2`): no declaration changes how text lexes.
  if (starts_with(m, "extra text after expected end of number") ||
      starts_with(m, "too many decimal points in number"))
    return "malformed number";
  if (starts_with(m, "expression must have") && contains(m, "but it has type \"") && !edg.empty() &&
      builtin_type(edg.back()))
    return "member of built-in type " + edg.back();
  if (starts_with(m, "request for member '") && contains(m, "which is of non-class type '") &&
      builtin_type(gcc.back()))
    return "member of built-in type " + gcc.back();
  static const std::regex kEdgRedefined(
      R"(has already been defined \(previous definition at line \d+\)$)");
  if (std::regex_search(m, kEdgRedefined)) return "own redefinition";
  if ((starts_with(m, "redefinition of ") || starts_with(m, "conflicting declaration ")) &&
      note_in_candidate(e, "previous"))
    return "own redefinition";
  return "";
}

// The name an "undeclared" error is about (nvcc: identifier "x" is undefined; gcc: 'x' was not
// declared in this scope, does not name a type, has not been declared), or empty.
std::string undeclared_name(const std::string& m) {
  if (starts_with(m, "identifier \"") && contains(m, "\" is undefined")) {
    const std::vector<std::string> edg = quoted(m, '"');
    return edg.empty() ? "" : edg[0];
  }
  if (starts_with(m, "'") &&
      (contains(m, "' was not declared in this scope") || contains(m, "' does not name a type") ||
       contains(m, "' has not been declared"))) {
    const std::vector<std::string> gcc = quoted(m, '\'');
    return gcc.empty() ? "" : gcc[0];
  }
  return "";
}

// An undeclared name that no header of the full tier spells (header_names.h), or empty. In the
// split tier the candidate must not declare it either, since the split may have put its
// declaration in the other file: there the name must be spelled once in the candidate's sources
// (at the use the error is about; a declaration would be a second), and not declared by
// anything the reader sees.
std::string unknown_name_class(const Diagnostic& e, const CandidateText& text,
                               DiagnosticsScope scope, const HeaderNames* names) {
  if (names == nullptr || text.pastes || !text.tokenized) return "";
  for (const auto& header : text.includes) {
    if (!names->has_header(header)) return "";
  }
  const std::string name = undeclared_name(e.message);
  if (name.empty() || contains(name, "::") || names->may_declare(name)) return "";
  if (scope == DiagnosticsScope::kSplit) {
    const auto count = text.spelled.find(name);
    if (text.declared.count(name) != 0 || (count != text.spelled.end() && count->second > 1))
      return "";
  }
  return "unknown name " + name + " (no header spells it)";
}

// The class of an error that is the candidate's own in the headers scope, or empty.
std::string own_error_class(const Diagnostic& e, const CandidateText& text) {
  if (std::string kind = split_safe_class(e); !kind.empty()) return kind;
  const std::string& m = e.message;
  const std::vector<std::string> edg = quoted(m, '"');
  const std::vector<std::string> gcc = quoted(m, '\'');
  auto own_name = [&](const std::string& name) {
    return !contains(name, "::") && text.declared.count(name) != 0;
  };
  auto own_class = [&](const std::string& type) {
    const std::string name = class_name(type);
    return !contains(name, "::") && !contains(name, "<") && text.classes.count(name) != 0;
  };
  // Undeclared names.
  if (const std::string name = undeclared_name(m); !name.empty() && own_name(name))
    return "own name " + name + " undeclared";
  // Members.
  if ((starts_with(m, "class \"") || starts_with(m, "struct \"") || starts_with(m, "union \"")) &&
      contains(m, "\" has no member \"") && !edg.empty() && own_class(edg[0]))
    return "no such member of own class " + edg[0];
  if (starts_with(m, "'") && contains(m, "' has no member named '") && !gcc.empty() &&
      own_class(gcc[0]))
    return "no such member of own class " + class_name(gcc[0]);
  // Arguments.
  if (starts_with(m, "too many arguments in function call") ||
      starts_with(m, "too few arguments in function call")) {
    const std::string callee = callee_at_caret(e);
    if (!callee.empty() && own_name(callee)) return "wrong argument count for own " + callee;
  }
  if ((starts_with(m, "too many arguments to function") ||
       starts_with(m, "too few arguments to function")) &&
      note_in_candidate(e, "declared here"))
    return "wrong argument count for an own function";
  // Conversions between built-in types.
  const bool edg_conversion =
      (starts_with(m, "a value of type \"") &&
       (contains(m, "\" cannot be used to initialize an entity of type \"") ||
        contains(m, "\" cannot be assigned to an entity of type \""))) ||
      (starts_with(m, "argument of type \"") && contains(m, "\" is incompatible with parameter"));
  if (edg_conversion && edg.size() == 2 && builtin_type(edg[0]) && builtin_type(edg[1]))
    return "conversion from " + edg[0] + " to " + edg[1];
  if ((starts_with(m, "invalid conversion from '") || starts_with(m, "cannot convert '")) &&
      gcc.size() >= 2 && builtin_type(gcc[0]) && builtin_type(gcc[1]))
    return "conversion from " + gcc[0] + " to " + gcc[1];
  if (starts_with(m, "return-statement with a value, in function returning 'void'") ||
      starts_with(m, "return-statement with no value, in function returning"))
    return "return statement against the function's type";
  // Incomplete classes of the candidate's.
  if (starts_with(m, "incomplete type \"") && !edg.empty() && own_class(edg[0]))
    return "own class " + edg[0] + " incomplete";
  if (starts_with(m, "invalid use of incomplete type '") && !gcc.empty() && own_class(gcc[0]))
    return "own class " + class_name(gcc[0]) + " incomplete";
  // An #include of a file that is not there (the tiers share their include paths).
  if (contains(m, "No such file or directory") || starts_with(m, "cannot open source file"))
    return "missing include file";
  return "";
}

}  // namespace

CompileErrorReading read_compile_errors(const std::string& output, const ExtensionSources& ext,
                                        DiagnosticsScope scope, DiagnosticsCompiler compiler,
                                        const HeaderNames* header_names) {
  // Brackets that do not pair up are the candidate's whatever the diagnostics say: most broken
  // RL answers look like `int threads = x128);`, whose first error is the undeclared name.
  for (const auto& [source, file] :
       {std::pair<const std::string*, const char*>{&ext.cuda_sources, kCudaFile},
        {&ext.cpp_sources, kCppFile}}) {
    const std::string at = unpaired_bracket(*source, file);
    if (!at.empty()) return {true, "unpaired bracket at " + at};
  }
  const std::vector<Diagnostic> errors = errors_of(output);
  if (errors.empty()) return {false, "no error line"};
  const Diagnostic& first = errors.front();
  if (first.path.empty()) return {false, "first error names no place: " + first.message};
  if (!in_candidate_file(first.path)) return {false, "first error is in " + first.path};
  const CandidateText text = read_candidate(ext);
  if (!text.unsafe.empty()) return {false, text.unsafe};
  const std::string where = first.path + ":" + std::to_string(first.line);
  std::string why;
  // Every error on the first error's line: an undeclared name there may be what broke the
  // syntax.
  for (const Diagnostic& e : errors) {
    if (e.path != first.path || e.line != first.line) continue;
    std::string kind;
    if (syntax_error(e.message)) {
      const std::string doubt = syntax_doubt(e, text, scope, compiler);
      if (!doubt.empty()) return {false, "syntax error at " + where + ", but " + doubt};
      kind = "syntax error";
    } else {
      kind = scope == DiagnosticsScope::kHeaders ? own_error_class(e, text) : split_safe_class(e);
      if (kind.empty()) kind = unknown_name_class(e, text, scope, header_names);
    }
    if (kind.empty()) return {false, "not known to be the candidate's own: " + e.message};
    if (why.empty()) why = kind + " at " + where;
  }
  return {true, why};
}

}  // namespace dice
