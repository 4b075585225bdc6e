// Reading JSON that another program wrote (the reward service's Python scripts: static_check.py,
// extract_sources.py, judge.py; the sandbox's interpreter probe): parsed with Boost.JSON, looked
// up by key with the caller's default where a key is missing or of another type, so a script
// that adds keys never breaks an older reader. For files a person writes (tasks, configs) use
// parse_text.h, whose errors give the line and column.
#pragma once

#include <boost/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace dice {

// Corruption "<what>: not JSON (<why>): <the text's first 200 bytes>" when `text` is not one
// JSON document.
Result<boost::json::value> parse_json(std::string_view text, const std::string& what);

// The member `key` of an object; null when `value` is not an object or has no such member.
const boost::json::value* json_member(const boost::json::value& value, std::string_view key);

std::string json_string(const boost::json::value& object, std::string_view key,
                        const std::string& fallback = "");
// Integers and doubles alike.
double json_number(const boost::json::value& object, std::string_view key, double fallback = 0);
bool json_bool(const boost::json::value& object, std::string_view key, bool fallback = false);
// The strings of an array member; non-string elements are skipped.
std::vector<std::string> json_strings(const boost::json::value& object, std::string_view key);
// True when the member is JSON null or missing.
bool json_is_null(const boost::json::value& object, std::string_view key);
// A number as a double (integers included), or `fallback` for any other value.
double json_as_number(const boost::json::value& value, double fallback = 0);
// The member "id" as text: a string as it is, an integral number in decimal; "" otherwise.
std::string json_id(const boost::json::value& object);

}  // namespace dice
