#include "common/config/config_errors.h"

namespace dice::config {

std::string join_path(const std::string& parent, const std::string& key) {
  if (parent.empty()) return key;
  if (key.empty()) return parent;
  if (key[0] == '[') return parent + key;
  return parent + "." + key;
}

std::string index_path(const std::string& parent, std::size_t index) {
  return parent + "[" + std::to_string(index) + "]";
}

namespace {

// True if `path` is `ancestor` or lies below it.
bool is_within(const std::string& path, const std::string& ancestor) {
  if (ancestor.empty()) return true;
  if (path.compare(0, ancestor.size(), ancestor) != 0) return false;
  if (path.size() == ancestor.size()) return true;
  char next = path[ancestor.size()];
  return next == '.' || next == '[';
}

// "a.b[2].c" -> "a.b[2]" -> "a.b" -> "a" -> "".
std::string parent_path(const std::string& path) {
  std::size_t cut = path.find_last_of(".[");
  return cut == std::string::npos ? "" : path.substr(0, cut);
}

}  // namespace

const std::string* ErrorLocator::override_for(const std::string& path) const {
  if (path.empty()) return nullptr;  // whole-file problems are never an override's fault
  // The last override wins, as it does when they are applied.
  for (auto it = overrides_.rbegin(); it != overrides_.rend(); ++it) {
    if (is_within(path, it->first) || is_within(it->first, path)) return &it->second;
  }
  return nullptr;
}

std::string ErrorLocator::locate(const std::string& path) const {
  if (const std::string* text = override_for(path)) return "override '" + *text + "'";
  std::string at = path;
  while (true) {
    auto found = positions_.find(at);
    if (found != positions_.end() && found->second.line > 0) {
      return file_name_ + ":" + std::to_string(found->second.line) + ":" +
             std::to_string(found->second.column);
    }
    if (at.empty()) return file_name_;
    at = parent_path(at);
  }
}

Status ErrorLocator::to_status(const std::vector<ConfigError>& errors) const {
  if (errors.empty()) return Status::ok_status();
  std::string message;
  for (const auto& error : errors) {
    if (!message.empty()) message += "\n";
    if (error.at.line > 0 && override_for(error.path) == nullptr) {
      message += file_name_ + ":" + std::to_string(error.at.line) + ":" +
                 std::to_string(error.at.column) + ": ";
    } else {
      message += locate(error.path) + ": ";
    }
    if (!error.path.empty()) message += error.path + ": ";
    message += error.message;
  }
  return Status::invalid_argument(message);
}

}  // namespace dice::config
