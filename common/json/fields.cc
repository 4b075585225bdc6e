#include "common/json/fields.h"

namespace dice {

Result<boost::json::value> parse_json(std::string_view text, const std::string& what) {
  boost::system::error_code error;
  boost::json::value value = boost::json::parse(text, error);
  if (error) {
    return Status::corruption(what + ": not JSON (" + error.message() +
                              "): " + std::string(text.substr(0, 200)));
  }
  return value;
}

const boost::json::value* json_member(const boost::json::value& value, std::string_view key) {
  if (!value.is_object()) return nullptr;
  return value.get_object().if_contains(key);
}

double json_as_number(const boost::json::value& value, double fallback) {
  if (value.is_double()) return value.get_double();
  if (value.is_int64()) return static_cast<double>(value.get_int64());
  if (value.is_uint64()) return static_cast<double>(value.get_uint64());
  return fallback;
}

std::string json_string(const boost::json::value& object, std::string_view key,
                        const std::string& fallback) {
  const boost::json::value* v = json_member(object, key);
  if (v == nullptr || !v->is_string()) return fallback;
  return std::string(v->get_string());
}

double json_number(const boost::json::value& object, std::string_view key, double fallback) {
  const boost::json::value* v = json_member(object, key);
  return v == nullptr ? fallback : json_as_number(*v, fallback);
}

bool json_bool(const boost::json::value& object, std::string_view key, bool fallback) {
  const boost::json::value* v = json_member(object, key);
  if (v == nullptr || !v->is_bool()) return fallback;
  return v->get_bool();
}

std::vector<std::string> json_strings(const boost::json::value& object, std::string_view key) {
  std::vector<std::string> out;
  const boost::json::value* v = json_member(object, key);
  if (v == nullptr || !v->is_array()) return out;
  for (const auto& e : v->get_array()) {
    if (e.is_string()) out.emplace_back(e.get_string());
  }
  return out;
}

std::string json_id(const boost::json::value& object) {
  const boost::json::value* v = json_member(object, "id");
  if (v == nullptr) return "";
  if (v->is_string()) return std::string(v->get_string());
  if (v->is_int64()) return std::to_string(v->get_int64());
  if (v->is_uint64()) return std::to_string(v->get_uint64());
  return "";
}

bool json_is_null(const boost::json::value& object, std::string_view key) {
  const boost::json::value* v = json_member(object, key);
  return v == nullptr || v->is_null();
}

}  // namespace dice
