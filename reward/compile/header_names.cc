#include "reward/compile/header_names.h"

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
  size_t i = 0;
  while (i < text.size()) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (identifier_start(c)) {
      size_t end = i + 1;
      while (end < text.size() && identifier_char(static_cast<unsigned char>(text[end]))) ++end;
      names_.emplace(text, i, end - i);
      i = end;
    } else if (std::isdigit(c)) {  // a number with its suffix ("1e10f", "0x1Fu") names nothing
      while (i < text.size() &&
             (identifier_char(static_cast<unsigned char>(text[i])) || text[i] == '.'))
        ++i;
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
