#include "reward/judge/judge_items.h"

#include <boost/json.hpp>
#include <cmath>
#include <fstream>
#include <sstream>

#include "common/json/parse_text.h"

namespace dice {
namespace {

namespace json = boost::json;

// The string member `key`; InvalidArgument naming the field when it is missing or not a string.
Result<std::string> required_string(const json::object& object, const char* key,
                                    const std::string& where) {
  const json::value* value = object.if_contains(key);
  if (value == nullptr) {
    return Status::invalid_argument(where + ": \"" + key + "\" is missing");
  }
  if (!value->is_string()) {
    return Status::invalid_argument(where + ": \"" + key + "\" is not a string");
  }
  return std::string(value->get_string());
}

Result<std::string> item_id(const json::object& object, const std::string& where) {
  const json::value* value = object.if_contains("id");
  if (value == nullptr) return Status::invalid_argument(where + ": \"id\" is missing");
  if (value->is_string() && !value->get_string().empty()) {
    return std::string(value->get_string());
  }
  if (value->is_int64()) return std::to_string(value->get_int64());
  if (value->is_uint64()) return std::to_string(value->get_uint64());
  if (value->is_double()) {
    const double n = value->get_double();
    if (std::floor(n) == n && std::fabs(n) < 1e15) {
      return std::to_string(static_cast<long long>(n));
    }
  }
  return Status::invalid_argument(where + ": \"id\" must be a non-empty string or an integer");
}

}  // namespace

Result<std::vector<JudgeItem>> parse_judge_items(const std::string& text,
                                                 const std::string& where) {
  boost::system::error_code error;
  std::string position;
  const json::value root = parse_json_text(text, &error, &position);
  if (error) {
    return Status::invalid_argument(where + ": not JSON (" + error.message() + " at " + position +
                                    ")");
  }
  if (!root.is_array()) {
    return Status::invalid_argument(where + ": expected a JSON array of items");
  }
  std::vector<JudgeItem> items;
  size_t index = 0;
  for (const json::value& value : root.get_array()) {
    std::string at = where + ": item " + std::to_string(index++);
    if (!value.is_object()) return Status::invalid_argument(at + ": not a JSON object");
    const json::object& object = value.get_object();
    DICE_ASSIGN_OR_RETURN(std::string id, item_id(object, at));
    at += " (id " + id + ")";
    JudgeItem item;
    item.id = std::move(id);
    DICE_ASSIGN_OR_RETURN(item.reference, required_string(object, "pytorch_code", at));
    DICE_ASSIGN_OR_RETURN(item.shape_variants, read_shape_variants(object, at));
    if (object.contains("middle") || object.contains("prefix") || object.contains("suffix")) {
      item.infill = true;
      for (auto [key, field] :
           {std::pair{"prefix", &item.prefix}, std::pair{"middle", &item.middle},
            std::pair{"suffix", &item.suffix}}) {
        DICE_ASSIGN_OR_RETURN(*field, required_string(object, key, at));
      }
    } else {
      const char* key = object.contains("candidate") ? "candidate" : "cuda_code";
      if (!object.contains(key)) {
        return Status::invalid_argument(
            at +
            ": no candidate: give \"prefix\"/\"middle\"/\"suffix\", \"cuda_code\" or "
            "\"candidate\"");
      }
      DICE_ASSIGN_OR_RETURN(item.full_source, required_string(object, key, at));
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
