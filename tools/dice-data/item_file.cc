#include "tools/dice-data/item_file.h"

#include <utility>

#include "common/json/parse_text.h"
#include "common/json/pretty_json.h"

namespace dice::data {
namespace {

namespace json = boost::json;

Status not_json(const std::string& where, const std::string& position,
                const boost::system::error_code& error, const std::string& hint = "") {
  return Status::invalid_argument(where + ":" + position + ": not JSON (" + error.message() + ")" +
                                  hint);
}

Result<std::vector<FileItem>> read_array(std::string_view text, const std::string& where) {
  boost::system::error_code error;
  std::string position;
  json::value root = parse_json_text(text, &error, &position);
  if (error) return not_json(where, position, error);
  if (!root.is_array()) return Status::invalid_argument(where + ": expected a JSON array of items");
  std::vector<FileItem> items;
  for (auto& v : root.get_array()) items.push_back({std::move(v), where});
  return items;
}

Result<std::vector<FileItem>> read_lines(std::string_view text, const std::string& where) {
  std::vector<FileItem> items;
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

}  // namespace

Result<ItemFile> read_item_file(std::string_view text, const std::string& where) {
  ItemFile file;
  const std::size_t first = text.find_first_not_of(" \t\r\n");
  file.lines = first == std::string_view::npos || text[first] != '[';
  DICE_ASSIGN_OR_RETURN(file.items, file.lines ? read_lines(text, where) : read_array(text, where));
  return file;
}

std::string item_array_text(const std::vector<boost::json::value>& items) {
  // An item at two spaces of indentation is pretty_json's text of it with every line indented
  // (strings hold no raw line breaks).
  if (items.empty()) return "[]\n";
  std::string out = "[\n";
  for (std::size_t i = 0; i < items.size(); ++i) {
    const std::string text = pretty_json(items[i]);
    out += "  ";
    for (std::size_t c = 0; c + 1 < text.size(); ++c)  // the last byte is its closing newline
      out += text[c] == '\n' ? std::string("\n  ") : std::string(1, text[c]);
    out += i + 1 < items.size() ? ",\n" : "\n]\n";
  }
  return out;
}

}  // namespace dice::data
