#include "tools/dice-data/infill_items.h"

#include <boost/json.hpp>
#include <utility>

#include "common/json/fields.h"
#include "common/json/parse_text.h"
#include "tools/dice-data/infill_split.h"
#include "tools/dice-data/pretty_json.h"

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

// An item read from the file, and where it is, for messages.
struct Item {
  json::value value;
  std::string at;  // "<where>", or in JSON Lines "<where>:<line>"
};

Status not_json(const std::string& where, const std::string& position,
                const boost::system::error_code& error, const std::string& hint = "") {
  return Status::invalid_argument(where + ":" + position + ": not JSON (" + error.message() + ")" +
                                  hint);
}

Result<std::vector<Item>> read_array(std::string_view text, const std::string& where) {
  boost::system::error_code error;
  std::string position;
  json::value root = parse_json_text(text, &error, &position);
  if (error) return not_json(where, position, error);
  if (!root.is_array()) return Status::invalid_argument(where + ": expected a JSON array of items");
  std::vector<Item> items;
  for (auto& v : root.get_array()) items.push_back({std::move(v), where});
  return items;
}

Result<std::vector<Item>> read_lines(std::string_view text, const std::string& where) {
  std::vector<Item> items;
  int line = 0;
  for (std::size_t at = 0; at < text.size();) {
    ++line;
    std::size_t nl = text.find('\n', at);
    if (nl == std::string_view::npos) nl = text.size();
    const std::string_view row = text.substr(at, nl - at);
    at = nl + 1;
    if (row.find_first_not_of(" \t\r") == std::string_view::npos) continue;
    boost::system::error_code error;
    std::string position;
    json::value v = parse_json_text(row, &error, &position);
    // position is "1:<column>" within the row.
    if (error) {
      return not_json(where, std::to_string(line) + position.substr(1), error,
                      "; items are a JSON array, or JSON Lines: one object per line");
    }
    items.push_back({std::move(v), where + ":" + std::to_string(line)});
  }
  return items;
}

std::string serialize_items(const std::vector<Item>& items, bool lines) {
  if (lines) {
    std::string out;
    for (const Item& item : items) out += json::serialize(item.value) + "\n";
    return out;
  }
  // One item per line at least: pretty_json() writes an array of flat objects on one line,
  // and a file of items is read and diffed item by item. An item at two spaces of indentation
  // is pretty_json's text of it with every line indented (strings hold no raw line breaks), so a
  // curriculum's rl_infill.json comes out byte for byte as the generator wrote it.
  if (items.empty()) return "[]\n";
  std::string out = "[\n";
  for (std::size_t i = 0; i < items.size(); ++i) {
    const std::string text = pretty_json(items[i].value);
    out += "  ";
    for (std::size_t c = 0; c + 1 < text.size(); ++c)  // the last byte is its closing newline
      out += text[c] == '\n' ? std::string("\n  ") : std::string(1, text[c]);
    out += i + 1 < items.size() ? ",\n" : "\n]\n";
  }
  return out;
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
  const bool lines = text[first] != '[';
  DICE_ASSIGN_OR_RETURN(std::vector<Item> items,
                        lines ? read_lines(text, where) : read_array(text, where));

  SplitItems out;
  out.items = items.size();
  std::vector<std::string> errors;
  for (std::size_t index = 0; index < items.size(); ++index) {
    Item& item = items[index];
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
  out.text = serialize_items(items, lines);
  return out;
}

}  // namespace dice::data
