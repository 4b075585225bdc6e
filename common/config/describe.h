// Reference docs derived from the same visit_fields declarations: every key with its type,
// default, checks and description. `dice-config docs` prints them as Markdown.
#pragma once

#include <yaml-cpp/yaml.h>

#include <string>
#include <type_traits>
#include <vector>

#include "common/config/config_errors.h"
#include "common/config/encode.h"
#include "common/config/field_checks.h"
#include "common/config/scalar_text.h"
#include "common/config/type_traits.h"

namespace dice::config {

struct FieldDoc {
  std::string path;           // "learner.optimizer.lr"; list elements as "cluster.nodes[].host"
  std::string type;           // "number", "list of integer", "one of: local, ssh, slurm", ...
  std::string default_value;  // flow YAML of the default; "" for sections
  std::string doc;            // the field's description
  std::string checks;         // "> 0; required"
  bool section = false;       // a group of keys, described by the entries below it
};

template <class T>
std::string type_name(bool path) {
  if constexpr (IsOptional<T>::value) {
    return type_name<typename T::value_type>(path) + " or null";
  } else if constexpr (IsSection<T>::value) {
    return "section";
  } else if constexpr (IsVector<T>::value) {
    return "list of " + type_name<typename T::value_type>(path);
  } else if constexpr (IsStringMap<T>::value) {
    return "map of string to " + type_name<typename T::mapped_type>(path);
  } else if constexpr (std::is_same_v<T, bool>) {
    return "bool";
  } else if constexpr (kIsInteger<T>) {
    return "integer";
  } else if constexpr (std::is_floating_point_v<T>) {
    return "number";
  } else if constexpr (std::is_same_v<T, std::string>) {
    return path ? "path" : "string";
  } else if constexpr (std::is_enum_v<T>) {
    return "one of: " + join_names(enum_name_list<T>());
  }
}

// The options struct inside a field, if any: a section, or a list / map / optional of sections.
template <class T, class = void>
struct InnerSection {
  using Type = void;
};
template <class T>
struct InnerSection<T, std::enable_if_t<IsSection<T>::value>> {
  using Type = T;
};
template <class T>
struct InnerSection<std::vector<T>> : InnerSection<T> {};
template <class T>
struct InnerSection<std::map<std::string, T>> : InnerSection<T> {};
template <class T>
struct InnerSection<std::optional<T>> : InnerSection<T> {};

template <class C>
std::string check_text(const C& check) {
  if constexpr (std::is_same_v<C, Required>) {
    return "required";
  } else if constexpr (std::is_same_v<C, IsPath>) {
    return "";
  } else {
    return check.describe();
  }
}

class FieldDescriber {
 public:
  FieldDescriber(std::string path, std::vector<FieldDoc>* docs)
      : path_(std::move(path)), docs_(docs) {}

  template <class F, class... C>
  void field(const char* name, const F& value, const char* doc, const C&... checks) {
    constexpr bool kPath = (std::is_same_v<C, IsPath> || ...);
    using Inner = typename InnerSection<F>::Type;
    FieldDoc entry;
    entry.path = join_path(path_, name);
    entry.type = type_name<F>(kPath);
    entry.doc = doc;
    std::vector<std::string> texts{check_text(checks)...};
    for (const std::string& text : texts) {
      if (text.empty()) continue;
      entry.checks += (entry.checks.empty() ? "" : "; ") + text;
    }
    entry.section = IsSection<F>::value;
    constexpr bool kRequired = (std::is_same_v<C, Required> || ...);
    if (!entry.section && !kRequired) {  // a required key's placeholder default means nothing
      YAML::Emitter out;
      out << YAML::Flow << encode_value(value);
      entry.default_value = out.c_str();
    }
    docs_->push_back(entry);
    if constexpr (!std::is_void_v<Inner>) {
      std::string inner_path = entry.path;
      if constexpr (IsVector<F>::value) inner_path += "[]";
      if constexpr (IsStringMap<F>::value) inner_path += ".<name>";
      Inner inner{};
      if constexpr (std::is_same_v<F, Inner>) inner = value;  // a plain section: its own defaults
      FieldDescriber describer(inner_path, docs_);
      inner.visit_fields(describer);
    }
  }

 private:
  std::string path_;
  std::vector<FieldDoc>* docs_;
};

// Every field of T (default-constructed), depth first in declaration order.
template <class T>
std::vector<FieldDoc> describe_fields() {
  std::vector<FieldDoc> docs;
  T defaults{};
  FieldDescriber describer("", &docs);
  defaults.visit_fields(describer);
  return docs;
}

// A Markdown table of `docs`.
std::string fields_markdown(const std::vector<FieldDoc>& docs);

}  // namespace dice::config
