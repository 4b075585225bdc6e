#include "learner/json_file.h"

#include <fstream>
#include <sstream>

namespace dice {
namespace {

// "line L, column C" of byte `offset` in `text`, for JSON syntax errors.
std::string position_of(const std::string& text, std::size_t offset) {
  std::size_t line = 1, column = 1;
  for (std::size_t i = 0; i < offset && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++line;
      column = 1;
    } else {
      ++column;
    }
  }
  return std::to_string(line) + ":" + std::to_string(column);
}

}  // namespace

Result<json::value> parse_json_file(const std::string& path, const std::string& what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::not_found(what + " " + path + ": cannot open");
  std::ostringstream buffer;
  buffer << in.rdbuf();
  if (in.bad()) return Status::io_error(what + " " + path + ": read failed");
  const std::string text = buffer.str();
  json::stream_parser parser;
  json::error_code ec;
  const std::size_t used = parser.write(text.data(), text.size(), ec);
  if (!ec) parser.finish(ec);
  if (ec) {
    return Status::invalid_argument(what + " " + path + ":" + position_of(text, used) +
                                    ": not valid JSON: " + ec.message());
  }
  return parser.release();
}

// The string at `key`, or an error naming it; `required` false: "" when absent.
Result<std::string> string_field(const json::object& entry, const char* key, bool required,
                                 const std::string& where) {
  const json::value* value = entry.if_contains(key);
  if (value == nullptr) {
    if (!required) return std::string();
    return Status::invalid_argument(where + ": missing \"" + key + "\"");
  }
  if (!value->is_string()) {
    return Status::invalid_argument(where + ": \"" + key + "\" must be a string, got " +
                                    json::serialize(*value).substr(0, 40));
  }
  return std::string(value->get_string().c_str(), value->get_string().size());
}

}  // namespace dice
