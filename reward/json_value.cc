#include "reward/json_value.h"

#include <capnp/compat/json.h>
#include <kj/exception.h>

namespace dice {

Result<JsonDocument> JsonDocument::parse(std::string_view text, const std::string& what) {
  JsonDocument doc;
  doc.message_ = std::make_shared<capnp::MallocMessageBuilder>();
  auto builder = doc.message_->initRoot<capnp::json::Value>();
  try {
    capnp::JsonCodec codec;
    codec.decodeRaw(kj::ArrayPtr<const char>(text.data(), text.size()), builder);
  } catch (const kj::Exception& e) {
    std::string head(text.substr(0, 200));
    return Status::corruption(what + ": not JSON (" + e.getDescription().cStr() + "): " + head);
  }
  doc.root_ = builder.asReader();
  return doc;
}

bool json_member(capnp::json::Value::Reader value, std::string_view key,
                 capnp::json::Value::Reader* out) {
  if (!value.isObject()) return false;
  for (auto field : value.getObject()) {
    auto name = field.getName();
    if (std::string_view(name.cStr(), name.size()) == key) {
      *out = field.getValue();
      return true;
    }
  }
  return false;
}

std::string json_string(capnp::json::Value::Reader object, std::string_view key,
                        const std::string& fallback) {
  capnp::json::Value::Reader v;
  if (!json_member(object, key, &v) || !v.isString()) return fallback;
  auto text = v.getString();
  return std::string(text.cStr(), text.size());
}

double json_number(capnp::json::Value::Reader object, std::string_view key, double fallback) {
  capnp::json::Value::Reader v;
  if (!json_member(object, key, &v) || !v.isNumber()) return fallback;
  return v.getNumber();
}

bool json_bool(capnp::json::Value::Reader object, std::string_view key, bool fallback) {
  capnp::json::Value::Reader v;
  if (!json_member(object, key, &v) || !v.isBoolean()) return fallback;
  return v.getBoolean();
}

std::vector<std::string> json_strings(capnp::json::Value::Reader object, std::string_view key) {
  std::vector<std::string> out;
  capnp::json::Value::Reader v;
  if (!json_member(object, key, &v) || !v.isArray()) return out;
  for (auto e : v.getArray()) {
    if (e.isString()) out.emplace_back(e.getString().cStr(), e.getString().size());
  }
  return out;
}

bool json_is_null(capnp::json::Value::Reader object, std::string_view key) {
  capnp::json::Value::Reader v;
  return !json_member(object, key, &v) || v.isNull();
}

}  // namespace dice
