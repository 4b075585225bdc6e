// YAML node -> options struct. Used through load.h; include this only to decode a node you
// already hold.
//
// Decoding is strict: a wrong type, an unknown or duplicated key, a missing required key or an
// unknown enum name is an error at that key path, and decoding goes on so that one pass reports
// every such problem. Values that fail keep their defaults.
#pragma once

#include <yaml-cpp/yaml.h>

#include <cmath>
#include <limits>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "common/config/config_errors.h"
#include "common/config/field_checks.h"
#include "common/config/scalar_text.h"
#include "common/config/type_traits.h"

namespace dice::config {

struct DecodeContext {
  std::vector<ConfigError>* errors = nullptr;
  ErrorLocator* locator = nullptr;  // positions of decoded nodes are recorded here
  std::string file_dir;             // relative paths written in the file resolve against this
  std::string work_dir;             // ... defaults and overrides against this

  void error(const std::string& path, std::string message, Position at = {}) {
    errors->push_back({path, std::move(message), at});
  }
};

// "'abc'", "a list", "a map", "null": what was found, for "expected X, got Y".
std::string describe_node(const YAML::Node& node);
Position node_position(const YAML::Node& node);
// `path` if absolute, else base/path; normalised lexically ("a/./b/../c" -> "a/c").
std::string resolve_path(const std::string& path, const std::string& base);

inline void resolve_paths(std::string& value, const std::string& base) {
  if (!value.empty()) value = resolve_path(value, base);
}
template <class T>
void resolve_paths(std::optional<T>& value, const std::string& base) {
  if (value) resolve_paths(*value, base);
}
template <class T>
void resolve_paths(std::vector<T>& values, const std::string& base) {
  for (auto& value : values) resolve_paths(value, base);
}
template <class T>
void resolve_paths(std::map<std::string, T>& values, const std::string& base) {
  for (auto& entry : values) resolve_paths(entry.second, base);
}

template <class T>
void decode_value(const YAML::Node& node, T& out, const std::string& path, DecodeContext& ctx);

// The visitor handed to a section's visit_fields while decoding it.
class SectionDecoder {
 public:
  // `node` is a map, or null for a section that is absent (its defaults stay, but required keys
  // below it are still reported missing).
  SectionDecoder(const YAML::Node& node, std::string path, DecodeContext& ctx);

  template <class F, class... C>
  void field(const char* name, F& value, const char* /*doc*/, const C&... /*checks*/) {
    constexpr bool kRequired = (std::is_same_v<C, Required> || ...);
    constexpr bool kPath = (std::is_same_v<C, IsPath> || ...);
    known_.emplace_back(name);
    std::string path = join_path(path_, name);
    const YAML::Node* child = find(name);
    std::string base = ctx_.work_dir;
    if (child == nullptr) {
      if (kRequired) {
        ctx_.error(path, "missing required key '" + std::string(name) + "'");
      } else if constexpr (IsSection<F>::value) {
        decode_value(YAML::Node(), value, path, ctx_);
      }
    } else {
      // A block section or list (which starts on the next line) and a null are best pointed at
      // by their key; a scalar or flow collection by its value.
      bool block =
          (child->IsMap() || child->IsSequence()) && child->Style() != YAML::EmitterStyle::Flow;
      Position at = block || child->IsNull() ? key_position(name) : node_position(*child);
      ctx_.locator->add_position(path, at.line > 0 ? at : key_position(name));
      decode_value(*child, value, path, ctx_);
      if (ctx_.locator->override_for(path) == nullptr) base = ctx_.file_dir;
    }
    if constexpr (kPath) resolve_paths(value, base);
  }

  // Keys in the map that no field claimed, each with a suggestion when one is close.
  void report_unknown_keys();

 private:
  const YAML::Node* find(const std::string& key) const;
  Position key_position(const std::string& key) const;

  std::string path_;
  DecodeContext& ctx_;
  struct Entry {
    std::string key;
    Position key_at;
    YAML::Node value;
  };
  std::vector<Entry> entries_;
  std::vector<std::string> known_;
};

template <class T>
void decode_integer(const YAML::Node& node, T& out, const std::string& path, DecodeContext& ctx) {
  const std::string& text = node.Scalar();
  bool ok = false;
  if constexpr (std::is_signed_v<T>) {
    std::int64_t v = 0;
    ok = parse_int64_text(text, &v) && v >= std::numeric_limits<T>::min() &&
         v <= std::numeric_limits<T>::max();
    if (ok) out = static_cast<T>(v);
  } else {
    std::uint64_t v = 0;
    ok = parse_uint64_text(text, &v) && v <= std::numeric_limits<T>::max();
    if (ok) out = static_cast<T>(v);
  }
  if (ok) return;
  double number = 0;
  // A whole number, compared without converting it to an integer type: out of that type's
  // range, which is what is being reported, the conversion is undefined behaviour.
  if (parse_double_text(text, &number) && std::isfinite(number) && std::trunc(number) == number) {
    ctx.error(path, "expected an integer in [" + std::to_string(std::numeric_limits<T>::min()) +
                        ", " + std::to_string(std::numeric_limits<T>::max()) + "], got '" + text +
                        "'");
  } else {
    ctx.error(path, "expected an integer, got " + describe_node(node));
  }
}

// A std::vector: each item decoded at path[i].
template <class T>
void decode_list(const YAML::Node& node, T& out, const std::string& path, DecodeContext& ctx) {
  if (!node.IsSequence()) {
    ctx.error(path, "expected a list, got " + describe_node(node));
    return;
  }
  T values;
  for (std::size_t i = 0; i < node.size(); ++i) {
    typename T::value_type value{};
    std::string item_path = index_path(path, i);
    ctx.locator->add_position(item_path, node_position(node[i]));
    decode_value(node[i], value, item_path, ctx);
    values.push_back(std::move(value));
  }
  out = std::move(values);
}

// A std::map keyed by string: plain-string keys, each once, each value decoded at path.key.
template <class T>
void decode_string_map(const YAML::Node& node, T& out, const std::string& path,
                       DecodeContext& ctx) {
  if (!node.IsMap()) {
    ctx.error(path, "expected a map, got " + describe_node(node));
    return;
  }
  T values;
  for (const auto& entry : node) {
    if (!entry.first.IsScalar()) {
      ctx.error(path, "keys must be plain strings, got " + describe_node(entry.first));
      continue;
    }
    const std::string& key = entry.first.Scalar();
    std::string item_path = join_path(path, key);
    if (values.count(key) != 0) {
      ctx.error(item_path, "duplicate key '" + key + "'");
      continue;
    }
    ctx.locator->add_position(item_path, node_position(entry.first));
    typename T::mapped_type value{};
    decode_value(entry.second, value, item_path, ctx);
    values.emplace(key, std::move(value));
  }
  out = std::move(values);
}

// One branch per field type an options struct may hold; containers recurse per item.
template <class T>
void decode_value(const YAML::Node& node, T& out, const std::string& path, DecodeContext& ctx) {
  if constexpr (IsOptional<T>::value) {
    if (node.IsNull()) {
      out.reset();
      return;
    }
    typename T::value_type value{};
    if (out) value = *out;
    decode_value(node, value, path, ctx);
    out = std::move(value);
  } else if constexpr (IsSection<T>::value) {
    if (!node.IsNull() && !node.IsMap()) {
      ctx.error(path, "expected a map of keys, got " + describe_node(node));
      return;
    }
    SectionDecoder decoder(node, path, ctx);
    out.visit_fields(decoder);
    decoder.report_unknown_keys();
  } else if constexpr (IsVector<T>::value) {
    decode_list(node, out, path, ctx);
  } else if constexpr (IsStringMap<T>::value) {
    decode_string_map(node, out, path, ctx);
  } else if constexpr (std::is_same_v<T, bool>) {
    if (!node.IsScalar() || !parse_bool_text(node.Scalar(), &out)) {
      ctx.error(path, "expected true or false, got " + describe_node(node));
    }
  } else if constexpr (kIsInteger<T>) {
    if (!node.IsScalar()) {
      ctx.error(path, "expected an integer, got " + describe_node(node));
      return;
    }
    decode_integer(node, out, path, ctx);
  } else if constexpr (std::is_floating_point_v<T>) {
    double value = 0;
    if (!node.IsScalar() || !parse_double_text(node.Scalar(), &value)) {
      ctx.error(path, "expected a number, got " + describe_node(node));
    } else if (std::isfinite(value) &&
               std::abs(value) > static_cast<double>(std::numeric_limits<T>::max())) {
      ctx.error(path, "number out of range, got " + describe_node(node));
    } else {
      out = static_cast<T>(value);
    }
  } else if constexpr (std::is_same_v<T, std::string>) {
    if (!node.IsScalar()) {
      ctx.error(path, "expected a string, got " + describe_node(node) +
                          (node.IsNull() ? " (write \"\" for an empty string)" : ""));
      return;
    }
    out = node.Scalar();
  } else if constexpr (std::is_enum_v<T>) {
    if (!node.IsScalar() || !enum_from_name(node.Scalar(), &out)) {
      std::vector<std::string> names = enum_name_list<T>();
      std::string message = "expected one of " + join_names(names) + ", got " + describe_node(node);
      std::string guess = node.IsScalar() ? closest_name(node.Scalar(), names) : "";
      if (!guess.empty()) message += " (did you mean '" + guess + "'?)";
      ctx.error(path, message);
    }
  } else {
    static_assert(sizeof(T) == 0, "this field type is not supported by dice::config");
  }
}

}  // namespace dice::config
