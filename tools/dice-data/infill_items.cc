#include "tools/dice-data/infill_items.h"

#include <boost/json.hpp>
#include <utility>

#include "common/json/fields.h"
#include "common/json/pretty_json.h"
#include "tools/dice-data/infill_split.h"
#include "tools/dice-data/item_file.h"

namespace dice::data {
namespace {

namespace json = boost::json;

// Errors listed in one message before the rest are only counted.
constexpr std::size_t kMaxListed = 20;

constexpr const char* kParts[] = {"prefix", "middle", "suffix"};

json::object parts_object(const InfillSplit& split) {
  json::object o;
  o["prefix"] = split.prefix;
  o["middle"] = split.middle;
  o["suffix"] = split.suffix;
  return o;
}

std::string serialize_items(const std::vector<FileItem>& items, bool lines) {
  std::string out;
  if (lines) {
    for (const FileItem& item : items) out += json::serialize(item.value) + "\n";
    return out;
  }
  // A curriculum's rl_infill.json comes out byte for byte as the generator wrote it.
  std::vector<json::value> values;
  for (const FileItem& item : items) values.push_back(item.value);
  return item_array_text(values);
}

}  // namespace

Result<std::string> split_candidate_json(std::string_view candidate, const std::string& where) {
  DICE_ASSIGN_OR_RETURN(const InfillSplit split, split_infill(candidate, where));
  return pretty_json(parts_object(split));
}

Result<SplitItems> split_items_text(std::string_view text, const std::string& where) {
  const std::size_t first = text.find_first_not_of(" \t\r\n");
  if (first == std::string_view::npos)
    return Status::invalid_argument(where + ": empty file: no items to split");
  DICE_ASSIGN_OR_RETURN(ItemFile file, read_item_file(text, where));
  std::vector<FileItem>& items = file.items;

  SplitItems out;
  out.items = items.size();
  std::vector<std::string> errors;
  for (std::size_t index = 0; index < items.size(); ++index) {
    FileItem& item = items[index];
    std::string label = "item " + std::to_string(index);
    if (!item.value.is_object()) {
      errors.push_back(item.at + ": " + label + ": not a JSON object");
      continue;
    }
    json::object& o = item.value.get_object();
    if (const std::string id = json_id(item.value); !id.empty()) label += " (id " + id + ")";
    const std::string name = item.at + ": " + label;
    const json::value* code = o.if_contains("cuda_code");
    if (code == nullptr || !code->is_string()) {
      errors.push_back(name + ": \"cuda_code\" is " + (code ? "not a string" : "missing"));
      continue;
    }
    auto split = split_infill(std::string_view(code->get_string()), name + ": cuda_code");
    if (!split.ok()) {
      errors.push_back(split.status().message());
      continue;
    }
    const json::object parts = parts_object(*split);
    bool had = true, same = true;
    for (const char* key : kParts) {
      const json::value* old = o.if_contains(key);
      had = had && old != nullptr;
      same = same && old != nullptr && *old == parts.at(key);
    }
    if (had) ++out.had_split;
    if (had && !same) out.replaced.push_back(label);
    for (const char* key : kParts) o[key] = parts.at(key);
  }
  if (!errors.empty()) {
    std::string message = where + ": " + std::to_string(errors.size()) + " of " +
                          std::to_string(items.size()) + " items cannot be split:";
    for (std::size_t i = 0; i < errors.size() && i < kMaxListed; ++i) message += "\n  " + errors[i];
    if (errors.size() > kMaxListed)
      message += "\n  ... and " + std::to_string(errors.size() - kMaxListed) + " more";
    return Status::invalid_argument(message);
  }
  out.text = serialize_items(items, file.lines);
  return out;
}

}  // namespace dice::data
