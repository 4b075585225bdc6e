#include "reward/compile/cuda_tokens.h"

#include <cctype>

namespace dice {
namespace {

bool ident_start(char c) {
  return std::isalpha(static_cast<unsigned char>(c)) || c == '_';
}
bool ident_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
}

class Lexer {
 public:
  explicit Lexer(const std::string& s) : s_(s) {}

  Result<std::vector<CudaToken>> run() {
    std::vector<CudaToken> out;
    bool line_start = true;  // only whitespace and comments so far on this line
    while (pos_ < s_.size()) {
      const char c = s_[pos_];
      if (c == '\n') {
        line_start = true;
        advance(1);
        continue;
      }
      if (std::isspace(static_cast<unsigned char>(c))) {
        advance(1);
        continue;
      }
      if (c == '\\' && peek(1) == '\n') {  // a line splice outside a directive
        advance(2);
        continue;
      }
      if (c == '/' && (peek(1) == '/' || peek(1) == '*')) {
        DICE_RETURN_IF_ERROR(skip_comment());
        continue;
      }
      CudaToken t;
      t.begin = pos_;
      t.line = line_;
      if (c == '#' && line_start) {
        t.kind = CudaToken::kDirective;
        DICE_RETURN_IF_ERROR(skip_directive());
      } else if (ident_start(c)) {
        size_t end = pos_;
        while (end < s_.size() && ident_char(s_[end])) ++end;
        const std::string word = s_.substr(pos_, end - pos_);
        const char next = end < s_.size() ? s_[end] : '\0';
        if ((next == '"' || next == '\'') && is_literal_prefix(word)) {
          t.kind = CudaToken::kLiteral;
          advance(end - pos_);
          DICE_RETURN_IF_ERROR(word.back() == 'R' && next == '"' ? skip_raw_string()
                                                                 : skip_quoted(next));
        } else {
          t.kind = CudaToken::kIdentifier;
          advance(end - pos_);
        }
      } else if (std::isdigit(static_cast<unsigned char>(c)) ||
                 (c == '.' && std::isdigit(static_cast<unsigned char>(peek(1))))) {
        t.kind = CudaToken::kNumber;
        skip_number();
      } else if (c == '"' || c == '\'') {
        t.kind = CudaToken::kLiteral;
        DICE_RETURN_IF_ERROR(skip_quoted(c));
      } else {
        t.kind = CudaToken::kPunct;
        advance(punct_length());
      }
      line_start = false;
      t.end = pos_;
      t.text = s_.substr(t.begin, t.end - t.begin);
      out.push_back(std::move(t));
    }
    return out;
  }

 private:
  char peek(size_t ahead) const { return pos_ + ahead < s_.size() ? s_[pos_ + ahead] : '\0'; }
  void advance(size_t n) {
    for (size_t i = 0; i < n && pos_ < s_.size(); ++i) {
      if (s_[pos_++] == '\n') ++line_;
    }
  }
  Status error(const std::string& what) const {
    return Status::invalid_argument("cuda_sources line " + std::to_string(line_) + ": " + what);
  }
  static bool is_literal_prefix(const std::string& w) {
    return w == "R" || w == "L" || w == "u" || w == "U" || w == "u8" || w == "LR" || w == "uR" ||
           w == "UR" || w == "u8R";
  }

  Status skip_comment() {
    if (peek(1) == '/') {
      while (pos_ < s_.size() && s_[pos_] != '\n') {
        // A backslash at the end of a // comment continues it onto the next line.
        advance(s_[pos_] == '\\' && peek(1) == '\n' ? 2 : 1);
      }
      return Status::ok_status();
    }
    const size_t close = s_.find("*/", pos_ + 2);
    if (close == std::string::npos) return error("unterminated comment");
    advance(close + 2 - pos_);
    return Status::ok_status();
  }

  Status skip_quoted(char quote) {
    advance(1);
    while (pos_ < s_.size() && s_[pos_] != quote) {
      if (s_[pos_] == '\n') return error("newline in a literal");
      advance(s_[pos_] == '\\' ? 2 : 1);
    }
    if (pos_ >= s_.size()) return error("unterminated literal");
    advance(1);
    return Status::ok_status();
  }

  // R"delim( ... )delim"
  Status skip_raw_string() {
    const size_t open = s_.find('(', pos_);
    if (open == std::string::npos || open - pos_ > 17) return error("malformed raw string");
    const std::string close = ")" + s_.substr(pos_ + 1, open - pos_ - 1) + "\"";
    const size_t end = s_.find(close, open);
    if (end == std::string::npos) return error("unterminated raw string");
    advance(end + close.size() - pos_);
    return Status::ok_status();
  }

  void skip_number() {
    while (pos_ < s_.size()) {
      const char c = s_[pos_];
      const bool exponent_sign = (c == '+' || c == '-') && pos_ > 0 &&
                                 std::string("eEpP").find(s_[pos_ - 1]) != std::string::npos;
      if (!ident_char(c) && c != '.' && c != '\'' && !exponent_sign) break;
      advance(1);
    }
  }

  // The directive runs to the first newline that is neither spliced nor inside a block comment.
  Status skip_directive() {
    while (pos_ < s_.size() && s_[pos_] != '\n') {
      if (s_[pos_] == '\\' && peek(1) == '\n') {
        advance(2);
      } else if (s_[pos_] == '/' && (peek(1) == '*' || peek(1) == '/')) {
        DICE_RETURN_IF_ERROR(skip_comment());
      } else if (s_[pos_] == '"' || s_[pos_] == '\'') {
        // Quotes in a directive (#include "x", #error don't) need not pair up.
        const size_t close = s_.find(s_[pos_], pos_ + 1);
        const size_t eol = s_.find('\n', pos_);
        advance(close != std::string::npos && close < eol ? close + 1 - pos_ : 1);
      } else {
        advance(1);
      }
    }
    return Status::ok_status();
  }

  size_t punct_length() const {
    const char c = s_[pos_];
    if ((c == '<' || c == '>') && peek(1) == c && peek(2) == c) return 3;
    if (c == ':' && peek(1) == ':') return 2;
    if (c == '-' && peek(1) == '>') return 2;
    return 1;
  }

  const std::string& s_;
  size_t pos_ = 0;
  int line_ = 1;
};

bool is(const CudaToken& t, const char* text) {
  return t.text == text;
}

// The parentheses of these wrap attributes, not a declarator's parameter list.
bool is_attribute_word(const CudaToken& t) {
  return is(t, "__align__") || is(t, "alignas") || is(t, "__attribute__") || is(t, "__declspec") ||
         is(t, "__launch_bounds__") || is(t, "decltype");
}

// Whether the "{" at `open` starts a class body or an initializer (the item then runs on to its
// ";") rather than a function, namespace or extern "C" body.
bool opens_class_or_initializer(const std::vector<CudaToken>& tokens, size_t first, size_t open) {
  size_t i = first;
  bool class_like = false;
  for (size_t depth = 0; i < open; ++i) {
    const CudaToken& t = tokens[i];
    if (depth == 0) {
      if (is(t, "=")) return true;  // int a[] = {...}; auto f = [] {...};
      if (is(t, "struct") || is(t, "class") || is(t, "union") || is(t, "enum")) class_like = true;
      // A parameter list: a function (struct S make() {...}), whatever keyword came first.
      if (is(t, "(") && i > first && !is_attribute_word(tokens[i - 1])) return false;
    }
    if (is(t, "(") || is(t, "[")) ++depth;
    if ((is(t, ")") || is(t, "]")) && depth > 0) --depth;
  }
  return class_like;
}

}  // namespace

Result<std::vector<CudaToken>> tokenize_cuda(const std::string& source) {
  return Lexer(source).run();
}

std::string directive_name(const CudaToken& directive) {
  size_t i = directive.text.find('#') + 1;
  while (i < directive.text.size() && (directive.text[i] == ' ' || directive.text[i] == '\t')) ++i;
  size_t end = i;
  while (end < directive.text.size() && ident_char(directive.text[end])) ++end;
  return directive.text.substr(i, end - i);
}

Result<std::vector<TopLevelItem>> split_top_level(const std::vector<CudaToken>& tokens) {
  std::vector<TopLevelItem> items;
  std::vector<char> open;  // the brackets open now
  TopLevelItem item;
  bool in_item = false;
  for (size_t i = 0; i < tokens.size(); ++i) {
    const CudaToken& t = tokens[i];
    if (!in_item) {
      item = TopLevelItem{};
      item.first = i;
      in_item = true;
      if (t.kind == CudaToken::kDirective) {
        item.directive = true;
        item.last = i + 1;
        items.push_back(item);
        in_item = false;
        continue;
      }
    }
    if (t.kind != CudaToken::kPunct) continue;
    const char c = t.text.size() == 1 ? t.text[0] : '\0';
    if (c == '(' || c == '[' || c == '{') {
      if (c == '{' && open.empty() && !opens_class_or_initializer(tokens, item.first, i)) {
        item.has_body = true;
        item.body_open = i;
      }
      open.push_back(c);
    } else if (c == ')' || c == ']' || c == '}') {
      const char want = c == ')' ? '(' : c == ']' ? '[' : '{';
      if (open.empty() || open.back() != want) {
        return Status::invalid_argument("cuda_sources line " + std::to_string(t.line) +
                                        ": unbalanced '" + t.text + "'");
      }
      open.pop_back();
      if (c == '}' && open.empty() && item.has_body) {
        // A stray ";" after a function body belongs to it.
        if (i + 1 < tokens.size() && is(tokens[i + 1], ";")) ++i;
        item.last = i + 1;
        items.push_back(item);
        in_item = false;
      }
    } else if (c == ';' && open.empty()) {
      item.last = i + 1;
      items.push_back(item);
      in_item = false;
    }
  }
  if (in_item || !open.empty()) {
    return Status::invalid_argument("cuda_sources: the last declaration does not end");
  }
  return items;
}

}  // namespace dice
