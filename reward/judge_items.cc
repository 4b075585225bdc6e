#include "reward/judge_items.h"

#include <cmath>
#include <fstream>
#include <sstream>

#include "reward/json_value.h"

namespace dice {
namespace {

using JsonReader = capnp::json::Value::Reader;

// The string member `key`; InvalidArgument naming the field when it is missing or not a string.
Result<std::string> required_string(JsonReader object, const std::string& key,
                                    const std::string& where) {
  JsonReader value;
  if (!json_member(object, key, &value)) {
    return Status::invalid_argument(where + ": \"" + key + "\" is missing");
  }
  if (!value.isString()) {
    return Status::invalid_argument(where + ": \"" + key + "\" is not a string");
  }
  auto text = value.getString();
  return std::string(text.cStr(), text.size());
}

bool has_member(JsonReader object, const std::string& key) {
  JsonReader value;
  return json_member(object, key, &value);
}

Result<std::string> item_id(JsonReader object, const std::string& where) {
  JsonReader value;
  if (!json_member(object, "id", &value)) {
    return Status::invalid_argument(where + ": \"id\" is missing");
  }
  if (value.isString() && value.getString().size() > 0) return std::string(value.getString());
  if (value.isNumber()) {
    const double n = value.getNumber();
    if (std::floor(n) == n && std::fabs(n) < 1e15) {
      return std::to_string(static_cast<long long>(n));
    }
  }
  return Status::invalid_argument(where + ": \"id\" must be a non-empty string or an integer");
}

}  // namespace

Result<std::vector<JudgeItem>> parse_judge_items(const std::string& text,
                                                 const std::string& where) {
  auto doc = JsonDocument::parse(text, where);
  if (!doc.ok()) return Status::invalid_argument(doc.status().message());
  if (!doc->root().isArray()) {
    return Status::invalid_argument(where + ": expected a JSON array of items");
  }
  std::vector<JudgeItem> items;
  size_t index = 0;
  for (auto object : doc->root().getArray()) {
    std::string at = where + ": item " + std::to_string(index++);
    if (!object.isObject()) return Status::invalid_argument(at + ": not a JSON object");
    auto id = item_id(object, at);
    if (!id.ok()) return id.status();
    at += " (id " + id.value() + ")";
    JudgeItem item;
    item.id = id.value();
    auto reference = required_string(object, "pytorch_code", at);
    if (!reference.ok()) return reference.status();
    item.reference = reference.value();
    if (has_member(object, "middle") || has_member(object, "prefix") ||
        has_member(object, "suffix")) {
      item.infill = true;
      for (auto [key, field] :
           {std::pair{"prefix", &item.prefix}, std::pair{"middle", &item.middle},
            std::pair{"suffix", &item.suffix}}) {
        auto value = required_string(object, key, at);
        if (!value.ok()) return value.status();
        *field = value.value();
      }
    } else {
      const char* key = has_member(object, "candidate") ? "candidate" : "cuda_code";
      if (!has_member(object, key)) {
        return Status::invalid_argument(
            at +
            ": no candidate: give \"prefix\"/\"middle\"/\"suffix\", \"cuda_code\" or "
            "\"candidate\"");
      }
      auto source = required_string(object, key, at);
      if (!source.ok()) return source.status();
      item.full_source = source.value();
    }
    items.push_back(std::move(item));
  }
  return items;
}

Result<std::vector<JudgeItem>> load_judge_items(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::invalid_argument(path + ": cannot open the items file");
  std::stringstream text;
  text << in.rdbuf();
  return parse_judge_items(text.str(), path);
}

std::string judge_response_text(const JudgeItem& item) {
  const std::string& body = item.infill ? item.middle : item.full_source;
  const bool ends_in_newline = !body.empty() && body.back() == '\n';
  return "```python\n" + body + (ends_in_newline ? "" : "\n") + "```\n";
}

}  // namespace dice
