#include "reward/compile/header_names.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <iterator>

namespace dice {
namespace {

namespace fs = std::filesystem;

bool identifier_start(unsigned char c) {
  return std::isalpha(c) || c == '_';
}
bool identifier_char(unsigned char c) {
  return std::isalnum(c) || c == '_';
}

// Where the identifier that starts at text[i] ends (at `end` at most).
size_t identifier_end(const std::string& text, size_t i, size_t end) {
  ++i;
  while (i < end && identifier_char(static_cast<unsigned char>(text[i]))) ++i;
  return i;
}

// Where the number that starts at text[i] ends: with its suffix ("1e10f", "0x1Fu") and digit
// separators (1'000), a number names nothing.
size_t number_end(const std::string& text, size_t i, size_t end) {
  ++i;
  while (i < end && (identifier_char(static_cast<unsigned char>(text[i])) || text[i] == '.' ||
                     (text[i] == '\'' && i + 1 < end &&
                      identifier_char(static_cast<unsigned char>(text[i + 1])))))
    ++i;
  return i;
}

}  // namespace

HeaderNames HeaderNames::read(const std::vector<std::string>& dirs,
                              const std::vector<std::string>& files) {
  HeaderNames out;
  // A symlink back up the tree would make the walk endless, and the toolchain's folders nest
  // (torch/include and torch/include/torch/csrc/api/include): each folder is entered once.
  std::unordered_set<std::string> folders;
  for (const auto& dir : dirs) {
    std::error_code ec;
    const std::string root = fs::canonical(dir, ec).string();
    if (ec || !folders.insert(root).second) continue;
    fs::recursive_directory_iterator it(dir,
                                        fs::directory_options::follow_directory_symlink |
                                            fs::directory_options::skip_permission_denied,
                                        ec);
    for (; !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
      std::error_code entry_ec;
      if (it->is_directory(entry_ec)) {
        const std::string real = fs::canonical(it->path(), entry_ec).string();
        if (entry_ec || !folders.insert(real).second) it.disable_recursion_pending();
        continue;
      }
      if (it->is_regular_file(entry_ec)) out.add_file(it->path().string());
    }
  }
  for (const auto& file : files) out.add_file(file);
  return out;
}

void HeaderNames::add_file(const std::string& path) {
  std::error_code ec;
  const std::string real = fs::canonical(path, ec).string();
  if (ec) {
    ++unread_;
    return;
  }
  if (!seen_.insert(real).second) return;
  std::ifstream in(real, std::ios::binary);
  if (!in) {
    ++unread_;
    return;
  }
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  // Also the path as the file was reached (a symlinked folder keeps its include spelling).
  paths_.push_back(path);
  if (real != path) paths_.push_back(real);
  add_names(text);
}

// One line's end for a comment or a literal: the newline not escaped by a backslash (a line
// splice joins the next line), or the end of the text.
size_t HeaderNames::line_end(const std::string& text, size_t i) {
  while (i < text.size() && text[i] != '\n') {
    if (text[i] == '\\' && i + 1 < text.size() &&
        (text[i + 1] == '\n' ||
         (text[i + 1] == '\r' && i + 2 < text.size() && text[i + 2] == '\n')))
      i += text[i + 1] == '\n' ? 2 : 3;
    else
      ++i;
  }
  return i;
}

// Comments hold prose, never a declaration: their words are left out (a name only a comment
// spells, such as `add_cuda` in a comment of torch's, would otherwise keep a retry). Literals
// are scanned for names like code (an over-approximation costs nothing), but a `//` or `/*` in
// one starts no comment. A literal ends at its line's end, so a lone quote (`don't` in an
// #error or under #if 0) costs at most the rest of its line, which declares nothing after it.
void HeaderNames::add_names(const std::string& text) {
  const size_t n = text.size();
  size_t i = 0;
  while (i < n) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c == '/' && i + 1 < n && text[i + 1] == '/') {
      i = line_end(text, i + 2);
    } else if (c == '/' && i + 1 < n && text[i + 1] == '*') {
      const size_t close = text.find("*/", i + 2);
      i = close == std::string::npos ? n : close + 2;
    } else if (c == '"' || c == '\'') {
      size_t end = i + 1;
      while (end < n && text[end] != static_cast<char>(c) && text[end] != '\n')
        end += text[end] == '\\' && end + 1 < n ? 2 : 1;
      add_code_names(text, i + 1, std::min(end, n));
      i = end + 1;
    } else if (identifier_start(c)) {
      const size_t end = identifier_end(text, i, n);
      const std::string word = text.substr(i, end - i);
      names_.insert(word);
      i = end;
      // A raw string (R"delim( ... )delim", with an encoding prefix) may hold quotes and
      // comment openers; its names count, its end is its delimiter's.
      const bool raw_prefix =
          word == "R" || word == "LR" || word == "uR" || word == "UR" || word == "u8R";
      if (raw_prefix && i < n && text[i] == '"') {
        const size_t open = text.find('(', i + 1);
        if (open != std::string::npos && open - i - 1 <= 16) {
          const std::string close = ")" + text.substr(i + 1, open - i - 1) + "\"";
          const size_t at = text.find(close, open + 1);
          if (at != std::string::npos) {
            add_code_names(text, open + 1, at);
            i = at + close.size();
          }
        }
      }
    } else if (std::isdigit(c)) {
      i = number_end(text, i, n);
    } else {
      ++i;
    }
  }
}

// The identifiers of text[begin, end), a literal's contents, read as words (no comments there).
void HeaderNames::add_code_names(const std::string& text, size_t begin, size_t end) {
  size_t i = begin;
  while (i < end) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (identifier_start(c)) {
      const size_t stop = identifier_end(text, i, end);
      names_.emplace(text, i, stop - i);
      i = stop;
    } else if (std::isdigit(c)) {
      i = number_end(text, i, end);
    } else {
      ++i;
    }
  }
}

bool HeaderNames::has_header(const std::string& spelled) const {
  if (spelled.empty()) return false;
  const std::string tail = "/" + spelled;
  for (const auto& file : paths_) {
    if (file.size() >= tail.size() &&
        file.compare(file.size() - tail.size(), tail.size(), tail) == 0)
      return true;
  }
  return false;
}

std::vector<std::string> make_rule_prerequisites(const std::string& rule) {
  std::vector<std::string> out;
  bool after_target = false;
  std::string word;
  auto flush = [&] {
    if (word.empty()) return;
    if (!after_target) {
      if (word.back() == ':') after_target = true;
    } else if (word != "\\") {
      out.push_back(word);
    }
    word.clear();
  };
  for (size_t i = 0; i < rule.size(); ++i) {
    const char c = rule[i];
    if (c == '\\' && i + 1 < rule.size() && rule[i + 1] == ' ') {  // an escaped space
      word += ' ';
      ++i;
    } else if (std::isspace(static_cast<unsigned char>(c))) {
      flush();
    } else {
      word += c;
    }
  }
  flush();
  return out;
}

}  // namespace dice
