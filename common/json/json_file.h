// JSON files a person writes (the task files of tasks/task_file.h, the learner's SFT data): the
// file read whole (common/read_file.h) and parsed with the line and column of a syntax error, and
// string members looked up strictly, with errors that name the member. For JSON another program
// prints, fields.h's lookups with defaults.
#pragma once

#include <boost/json.hpp>
#include <string>

#include "common/status.h"

namespace dice {

// The one JSON document filling the file at `path`. NotFound / IOError naming the path as
// read_file gives them; InvalidArgument "<path>:<line>:<column>: not JSON: <why>" when the text
// is not one JSON document.
Result<boost::json::value> read_json_file(const std::string& path);

// The string member `key` of `object`: "" when it is absent and not `required`. InvalidArgument
// "<where>: missing \"<key>\"", or "<where>: \"<key>\" must be a string, got <the value's first
// 40 bytes as JSON>".
Result<std::string> json_string_member(const boost::json::object& object, const char* key,
                                       bool required, const std::string& where);

}  // namespace dice
