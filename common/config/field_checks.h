// What an options struct may say about a field besides its name, value and doc:
//
//   v.field("lr", lr, "AdamW learning rate. Default: 1e-6", config::greater_than(0));
//   v.field("model_path", model_path, "Checkpoint folder. Required.", config::required(),
//           config::is_path());
//
// Flags: `required()` (the key must be present) and `is_path()` (a relative path is made absolute;
// see load.h for against what). Checks: `in_range`, `at_least`, `at_most`, `greater_than`,
// `non_empty()`, `one_of`. Range and one-of checks apply to each element of a list or map field and
// to the value of a set optional; `non_empty()` applies to the field itself.
//
// Enums are read and written by name. Next to the enum, define a table and a function that
// argument-dependent lookup finds:
//   inline constexpr config::EnumName<Backend> kBackendNames[] = {{Backend::kLocal, "local"}, ...};
//   constexpr const auto& enum_names(Backend) { return kBackendNames; }
#pragma once

#include <cmath>
#include <limits>
#include <sstream>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace dice::config {

struct Required {};
inline constexpr Required required() {
  return {};
}

struct IsPath {};
inline constexpr IsPath is_path() {
  return {};
}

template <class E>
struct EnumName {
  E value;
  const char* name;
};

// The name of an enum value ("?" for a value missing from its table, which is a bug).
template <class E>
std::string enum_to_name(E value) {
  for (const auto& entry : enum_names(E{})) {
    if (entry.value == value) return entry.name;
  }
  return "?";
}

template <class E>
bool enum_from_name(const std::string& name, E* value) {
  for (const auto& entry : enum_names(E{})) {
    if (name == entry.name) {
      *value = entry.value;
      return true;
    }
  }
  return false;
}

template <class E>
std::vector<std::string> enum_name_list() {
  std::vector<std::string> names;
  for (const auto& entry : enum_names(E{})) names.emplace_back(entry.name);
  return names;
}

// Shortest text that reads back as the same double ("1e-06", "0.9", "151669").
std::string format_number(double value);
// The same for a float: shortest text that reads back to the same float ("0.1", not 0.100000001).
std::string format_number(float value);

// A closed, open or half-open interval of numbers.
struct NumberRange {
  static constexpr bool kElementwise = true;
  double lo = -std::numeric_limits<double>::infinity();
  double hi = std::numeric_limits<double>::infinity();
  bool lo_inclusive = true;
  bool hi_inclusive = true;

  template <class T>
  std::string check(const T& value) const {
    static_assert(std::is_arithmetic_v<T> && !std::is_same_v<T, bool>,
                  "range checks apply to numbers");
    double v = static_cast<double>(value);
    bool ok = (lo_inclusive ? v >= lo : v > lo) && (hi_inclusive ? v <= hi : v < hi);
    if (ok) return "";
    return "must be " + describe() + ", got " + format_number(v);
  }
  std::string describe() const;
};

inline NumberRange in_range(double lo, double hi) {
  return {lo, hi, true, true};
}
inline NumberRange at_least(double lo) {
  return {lo, std::numeric_limits<double>::infinity()};
}
inline NumberRange at_most(double hi) {
  return {-std::numeric_limits<double>::infinity(), hi};
}
inline NumberRange greater_than(double lo) {
  return {lo, std::numeric_limits<double>::infinity(), false, true};
}

struct NonEmpty {
  static constexpr bool kElementwise = false;
  template <class T>
  std::string check(const T& value) const {
    return value.empty() ? "must not be empty" : "";
  }
  std::string describe() const { return "non-empty"; }
};
inline constexpr NonEmpty non_empty() {
  return {};
}

// For strings whose set of values is open-ended in principle but fixed for now; use an enum when
// the code switches on the value.
struct OneOf {
  static constexpr bool kElementwise = true;
  std::vector<std::string> names;

  std::string check(const std::string& value) const;
  std::string describe() const;
};
inline OneOf one_of(std::vector<std::string> names) {
  return OneOf{std::move(names)};
}

}  // namespace dice::config
