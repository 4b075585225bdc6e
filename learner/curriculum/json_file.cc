#include "learner/curriculum/json_file.h"

#include <fstream>
#include <sstream>

#include "common/json/parse_text.h"

namespace dice {

Result<json::value> parse_json_file(const std::string& path, const std::string& what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::not_found(what + " " + path + ": cannot open");
  std::ostringstream buffer;
  buffer << in.rdbuf();
  if (in.bad()) return Status::io_error(what + " " + path + ": read failed");
  json::error_code ec;
  std::string position;
  json::value root = parse_json_text(buffer.str(), &ec, &position);
  if (ec) {
    return Status::invalid_argument(what + " " + path + ":" + position +
                                    ": not valid JSON: " + ec.message());
  }
  return root;
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
