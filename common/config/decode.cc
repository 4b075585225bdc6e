#include "common/config/decode.h"

#include <filesystem>

namespace dice::config {

std::string describe_node(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Null:
    case YAML::NodeType::Undefined:
      return "null";
    case YAML::NodeType::Scalar:
      return "'" + node.Scalar() + "'";
    case YAML::NodeType::Sequence:
      return "a list";
    case YAML::NodeType::Map:
      return "a map";
  }
  return "?";
}

Position node_position(const YAML::Node& node) {
  YAML::Mark mark = node.Mark();
  if (mark.is_null()) return {};
  return {mark.line + 1, mark.column + 1};
}

std::string resolve_path(const std::string& path, const std::string& base) {
  std::filesystem::path p(path);
  if (p.is_absolute()) return p.lexically_normal().string();
  return (std::filesystem::path(base) / p).lexically_normal().string();
}

SectionDecoder::SectionDecoder(const YAML::Node& node, std::string path, DecodeContext& ctx)
    : path_(std::move(path)), ctx_(ctx) {
  if (!node.IsMap()) return;
  for (const auto& entry : node) {
    if (!entry.first.IsScalar()) {
      ctx_.error(path_, "keys must be plain strings, got " + describe_node(entry.first));
      continue;
    }
    const std::string& key = entry.first.Scalar();
    if (find(key) != nullptr) {
      ctx_.error(join_path(path_, key),
                 "duplicate key '" + key + "' (first given at line " +
                     std::to_string(key_position(key).line) + ")",
                 node_position(entry.first));
      continue;
    }
    entries_.push_back({key, node_position(entry.first), entry.second});
  }
}

const YAML::Node* SectionDecoder::find(const std::string& key) const {
  for (const auto& entry : entries_) {
    if (entry.key == key) return &entry.value;
  }
  return nullptr;
}

Position SectionDecoder::key_position(const std::string& key) const {
  for (const auto& entry : entries_) {
    if (entry.key == key) return entry.key_at;
  }
  return {};
}

void SectionDecoder::report_unknown_keys() {
  for (const auto& entry : entries_) {
    bool known = false;
    for (const auto& name : known_) known = known || name == entry.key;
    if (known) continue;
    std::string key_path = join_path(path_, entry.key);
    ctx_.locator->add_position(key_path, entry.key_at);
    std::string message = "unknown key '" + entry.key + "'";
    std::string guess = closest_name(entry.key, known_);
    if (!guess.empty()) {
      message += " (did you mean '" + guess + "'?)";
    } else {
      message += " (known keys: " + join_names(known_) + ")";
    }
    ctx_.error(key_path, message);
  }
}

}  // namespace dice::config
