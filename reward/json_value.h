// Reading the JSON that the reward service's Python scripts print (static_check.py,
// extract_sources.py, judge.py). Parsed with Cap'n Proto's JSON codec into its generic
// json::Value tree (Boost.JSON is not in Boost 1.74); lookups are by key, missing keys give the
// caller's default, so a script that adds keys never breaks an older worker.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <capnp/compat/json.capnp.h>
#include <capnp/message.h>

#include "common/status.h"

namespace dice {

class JsonDocument {
 public:
  // Errors with `what` (e.g. "static_check.py output") in the message when `text` is not JSON.
  static Result<JsonDocument> parse(std::string_view text, const std::string& what);

  capnp::json::Value::Reader root() const { return root_; }

 private:
  std::shared_ptr<capnp::MallocMessageBuilder> message_;
  capnp::json::Value::Reader root_;
};

// The member `key` of an object; false when `value` is not an object or has no such member.
bool json_member(capnp::json::Value::Reader value, std::string_view key,
                 capnp::json::Value::Reader* out);

std::string json_string(capnp::json::Value::Reader object, std::string_view key,
                        const std::string& fallback = "");
double json_number(capnp::json::Value::Reader object, std::string_view key, double fallback = 0);
bool json_bool(capnp::json::Value::Reader object, std::string_view key, bool fallback = false);
// The strings of an array member; non-string elements are skipped.
std::vector<std::string> json_strings(capnp::json::Value::Reader object, std::string_view key);
// True when the member exists and is JSON null (or is missing).
bool json_is_null(capnp::json::Value::Reader object, std::string_view key);

}  // namespace dice
