#include "tools/dice-data/python_tokens.h"

#include <algorithm>
#include <cctype>
#include <utility>

namespace dice::data {
namespace {

bool is_name_start(unsigned char c) {
  // Bytes of a multi-byte UTF-8 character count as letters: Python allows such identifiers.
  return std::isalpha(c) || c == '_' || c >= 0x80;
}

bool is_name_char(unsigned char c) {
  return is_name_start(c) || std::isdigit(c);
}

// The prefixes a string literal may carry (r, b, f, u and Python 3.14's t, in any case).
bool is_string_prefix(std::string_view name) {
  std::string lower(name);
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  for (const char* p : {"r", "u", "b", "f", "t", "br", "rb", "fr", "rf", "tr", "rt"})
    if (lower == p) return true;
  return false;
}

// Longest first, so that "**=" is one token and "=" is only a plain assignment.
constexpr const char* kOperators[] = {
    "**=", "//=", ">>=", "<<=", "...", "->", "+=", "-=", "*=", "/=", "%=", "&=",
    "|=",  "^=",  "@=",  "==",  "!=",  "<=", ">=", ":=", "**", "//", "<<", ">>"};

class Tokenizer {
 public:
  Tokenizer(std::string_view source, const std::string& where) : src_(source), where_(where) {}

  Result<std::vector<PyToken>> run() {
    while (pos_ < src_.size()) {
      const unsigned char c = static_cast<unsigned char>(src_[pos_]);
      if (c == '\n') {
        newline(pos_ + 1);
        if (brackets_.empty()) new_statement_ = true;
      } else if (c == ' ' || c == '\t' || c == '\f' || c == '\r') {
        ++pos_;
      } else if (c == '\\' && continues_line()) {
        // A backslash at the end of a line joins the next line to this statement.
      } else if (c == '#') {
        while (pos_ < src_.size() && src_[pos_] != '\n') ++pos_;
      } else if (c == '"' || c == '\'') {
        DICE_RETURN_IF_ERROR(string_literal(pos_));
      } else if (is_name_start(c)) {
        const std::size_t begin = pos_;
        while (pos_ < src_.size() && is_name_char(static_cast<unsigned char>(src_[pos_]))) ++pos_;
        const bool quote = pos_ < src_.size() && (src_[pos_] == '"' || src_[pos_] == '\'');
        if (quote && is_string_prefix(src_.substr(begin, pos_ - begin))) {
          DICE_RETURN_IF_ERROR(string_literal(begin));
        } else {
          push(PyTokenKind::kName, begin);
        }
      } else if (std::isdigit(c) || (c == '.' && pos_ + 1 < src_.size() &&
                                     std::isdigit(static_cast<unsigned char>(src_[pos_ + 1])))) {
        const std::size_t begin = pos_;
        while (pos_ < src_.size() &&
               (is_name_char(static_cast<unsigned char>(src_[pos_])) || src_[pos_] == '.'))
          ++pos_;
        push(PyTokenKind::kNumber, begin);
      } else {
        DICE_RETURN_IF_ERROR(op());
      }
    }
    if (!brackets_.empty()) {
      const auto& [bracket, line] = brackets_.back();
      return error(line, "'" + std::string(1, bracket) + "' is never closed");
    }
    return std::move(tokens_);
  }

 private:
  void newline(std::size_t next) {
    ++line_;
    line_start_ = next;
    pos_ = next;
  }

  // At a backslash: true (and past the line break) when it ends its line.
  bool continues_line() {
    std::size_t next = pos_ + 1;
    if (next < src_.size() && src_[next] == '\r') ++next;
    if (next >= src_.size() || src_[next] != '\n') return false;
    newline(next + 1);
    return true;
  }

  void push(PyTokenKind kind, std::size_t begin) { push(kind, begin, line_, line_start_); }

  void push(PyTokenKind kind, std::size_t begin, int line, std::size_t line_start) {
    PyToken t;
    t.kind = kind;
    t.text = std::string(src_.substr(begin, pos_ - begin));
    t.begin = begin;
    t.end = pos_;
    t.line = line;
    t.depth = static_cast<int>(brackets_.size());
    t.starts_statement = new_statement_;
    t.at_column_zero = begin == line_start;
    new_statement_ = false;
    tokens_.push_back(std::move(t));
  }

  // From `begin` (its prefix, if any) with pos_ on the opening quote, to past the closing one.
  // A backslash always takes the next byte with it, in raw strings too: r"\"" is one string.
  Status string_literal(std::size_t begin) {
    const int open_line = line_;
    const std::size_t open_line_start = line_start_;
    const char quote = src_[pos_];
    const bool triple = src_.compare(pos_, 3, std::string(3, quote)) == 0;
    const std::string closing(triple ? 3 : 1, quote);
    pos_ += closing.size();
    while (true) {
      if (pos_ >= src_.size()) {
        return error(open_line,
                     "unterminated string: the " + closing + " opened here is never closed");
      }
      const char c = src_[pos_];
      if (c == '\\') {
        // The escaped byte; an escaped line break (\n or \r\n) goes on to the next line.
        std::size_t next = pos_ + 1;
        if (src_.compare(next, 2, "\r\n") == 0) ++next;
        if (next < src_.size() && src_[next] == '\n') {
          newline(next + 1);
        } else {
          pos_ = std::min(next + 1, src_.size());
        }
        continue;
      }
      if (c == '\n') {
        if (!triple) {
          return error(open_line, "unterminated string: the " + closing +
                                      " opened here is not closed on its line");
        }
        newline(pos_ + 1);
        continue;
      }
      if (src_.compare(pos_, closing.size(), closing) == 0) {
        pos_ += closing.size();
        break;
      }
      ++pos_;
    }
    // The token keeps the line it starts on, where its prefix and opening quote are.
    push(PyTokenKind::kString, begin, open_line, open_line_start);
    return Status::ok_status();
  }

  Status op() {
    const std::size_t begin = pos_;
    const char c = src_[pos_];
    if (c == '(' || c == '[' || c == '{') {
      ++pos_;
      push(PyTokenKind::kOp, begin);
      brackets_.emplace_back(c, line_);
      return Status::ok_status();
    }
    if (c == ')' || c == ']' || c == '}') {
      const char open = c == ')' ? '(' : c == ']' ? '[' : '{';
      if (brackets_.empty() || brackets_.back().first != open) {
        std::string why = brackets_.empty()
                              ? "closes nothing"
                              : "does not close the '" + std::string(1, brackets_.back().first) +
                                    "' of line " + std::to_string(brackets_.back().second);
        return error(line_, "'" + std::string(1, c) + "' " + why);
      }
      brackets_.pop_back();
      ++pos_;
      push(PyTokenKind::kOp, begin);
      return Status::ok_status();
    }
    std::size_t length = 1;
    for (const char* o : kOperators) {
      const std::string_view op(o);
      if (src_.compare(pos_, op.size(), op) == 0) {
        length = op.size();
        break;
      }
    }
    pos_ += length;
    push(PyTokenKind::kOp, begin);
    if (c == ';' && brackets_.empty()) new_statement_ = true;
    return Status::ok_status();
  }

  // "<where>:N: why".
  Status error(int line, const std::string& why) const {
    return Status::invalid_argument(where_ + ":" + std::to_string(line) + ": " + why);
  }

  std::string_view src_;
  std::string where_;
  std::size_t pos_ = 0;
  int line_ = 1;
  std::size_t line_start_ = 0;
  bool new_statement_ = true;
  std::vector<std::pair<char, int>> brackets_;  // open brackets and the lines they open on
  std::vector<PyToken> tokens_;
};

}  // namespace

Result<std::vector<PyToken>> tokenize_python(std::string_view source, const std::string& where) {
  return Tokenizer(source, where).run();
}

}  // namespace dice::data
