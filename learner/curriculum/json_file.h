// The JSON input files of the learner (task files, SFT data): read and parsed with errors that
// name the file and the line and column, and typed field access with errors that name the field.
#pragma once

#include <boost/json.hpp>
#include <string>

#include "common/status.h"

namespace dice {

namespace json = boost::json;

// NotFound / IOError / InvalidArgument (with line:column) naming `what` and `path`.
Result<json::value> parse_json_file(const std::string& path, const std::string& what);

// The string at `key`, or an error naming it; `required` false: "" when absent.
Result<std::string> string_field(const json::object& entry, const char* key, bool required,
                                 const std::string& where);

}  // namespace dice
