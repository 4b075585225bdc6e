// Options struct -> YAML: what `--print-config` and `dice-config print` show. Every field is
// written, defaults included, in declaration order; numbers in the shortest form that reads back
// to the same value, so decode(encode(x)) == x.
#pragma once

#include <yaml-cpp/yaml.h>

#include <string>
#include <type_traits>

#include "common/config/field_checks.h"
#include "common/config/type_traits.h"

namespace dice::config {

template <class T>
YAML::Node encode_value(const T& value);

class SectionEncoder {
 public:
  explicit SectionEncoder(YAML::Node node) : node_(node) {}

  template <class F, class... C>
  void field(const char* name, const F& value, const char* /*doc*/, const C&... /*checks*/) {
    node_[name] = encode_value(value);
  }

 private:
  YAML::Node node_;  // yaml-cpp nodes are handles: writes through this copy reach the caller's
};

template <class T>
YAML::Node encode_value(const T& value) {
  if constexpr (IsOptional<T>::value) {
    return value ? encode_value(*value) : YAML::Node(YAML::NodeType::Null);
  } else if constexpr (IsSection<T>::value) {
    YAML::Node node(YAML::NodeType::Map);
    SectionEncoder encoder(node);
    // visit_fields is shared with the decoder, so it takes a mutable object; the encoder only
    // reads.
    const_cast<T&>(value).visit_fields(encoder);
    return node;
  } else if constexpr (IsVector<T>::value) {
    YAML::Node node(YAML::NodeType::Sequence);
    bool all_scalars = true;
    for (const auto& item : value) {
      YAML::Node encoded = encode_value(item);
      all_scalars = all_scalars && !encoded.IsMap() && !encoded.IsSequence();
      node.push_back(encoded);
    }
    if (all_scalars) node.SetStyle(YAML::EmitterStyle::Flow);  // gpus: [0, 1]
    return node;
  } else if constexpr (IsStringMap<T>::value) {
    YAML::Node node(YAML::NodeType::Map);
    for (const auto& entry : value) node[entry.first] = encode_value(entry.second);
    if (value.empty()) node.SetStyle(YAML::EmitterStyle::Flow);  // {}
    return node;
  } else if constexpr (std::is_same_v<T, bool>) {
    return YAML::Node(value ? "true" : "false");
  } else if constexpr (kIsInteger<T>) {
    return YAML::Node(std::to_string(value));
  } else if constexpr (std::is_floating_point_v<T>) {
    if constexpr (std::is_same_v<T, float>) {
      return YAML::Node(format_number(value));
    } else {
      return YAML::Node(format_number(static_cast<double>(value)));
    }
  } else if constexpr (std::is_same_v<T, std::string>) {
    return YAML::Node(value);
  } else if constexpr (std::is_enum_v<T>) {
    return YAML::Node(enum_to_name(value));
  } else {
    static_assert(sizeof(T) == 0, "this field type is not supported by dice::config");
  }
}

// Block-style YAML text of a whole options struct.
template <class T>
std::string to_yaml_text(const T& value) {
  YAML::Emitter out;
  out << encode_value(value);
  return std::string(out.c_str()) + "\n";
}

}  // namespace dice::config
