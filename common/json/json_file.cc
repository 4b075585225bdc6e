#include "common/json/json_file.h"

#include "common/json/parse_text.h"
#include "common/read_file.h"

namespace dice {

Result<boost::json::value> read_json_file(const std::string& path) {
  DICE_ASSIGN_OR_RETURN(std::string text, read_file(path));
  boost::system::error_code error;
  std::string position;
  boost::json::value root = parse_json_text(text, &error, &position);
  if (error) {
    return Status::invalid_argument(path + ":" + position + ": not JSON: " + error.message());
  }
  return root;
}

Result<std::string> json_string_member(const boost::json::object& object, const char* key,
                                       bool required, const std::string& where) {
  const boost::json::value* value = object.if_contains(key);
  if (value == nullptr) {
    if (!required) return std::string();
    return Status::invalid_argument(where + ": missing \"" + key + "\"");
  }
  if (!value->is_string()) {
    return Status::invalid_argument(where + ": \"" + key + "\" must be a string, got " +
                                    boost::json::serialize(*value).substr(0, 40));
  }
  return std::string(value->get_string());
}

}  // namespace dice
