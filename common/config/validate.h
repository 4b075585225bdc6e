// Checks on decoded (or hand-built) options: each field's range / non-empty / one-of checks, then
// each section's own `validate(Checker&) const` for relations between fields. Decoding runs this
// after a clean decode; code that builds options by hand can call validate_config directly.
#pragma once

#include <string>
#include <type_traits>
#include <vector>

#include "common/config/config_errors.h"
#include "common/config/field_checks.h"
#include "common/config/type_traits.h"
#include "common/status.h"

namespace dice::config {

template <class C, class T>
void apply_check(const C& check, const T& value, const std::string& path,
                 std::vector<ConfigError>* errors) {
  if constexpr (std::is_same_v<C, Required> || std::is_same_v<C, IsPath>) {
    return;  // flags, not checks: decoding handles them
  } else if constexpr (IsOptional<T>::value) {
    if (value) apply_check(check, *value, path, errors);
  } else if constexpr (C::kElementwise && IsVector<T>::value) {
    for (std::size_t i = 0; i < value.size(); ++i) {
      apply_check(check, value[i], index_path(path, i), errors);
    }
  } else if constexpr (C::kElementwise && IsStringMap<T>::value) {
    for (const auto& entry : value) {
      apply_check(check, entry.second, join_path(path, entry.first), errors);
    }
  } else {
    std::string problem = check.check(value);
    if (!problem.empty()) errors->push_back({path, problem, {}});
  }
}

template <class T>
void validate_value(const T& value, const std::string& path, std::vector<ConfigError>* errors);

class SectionValidator {
 public:
  SectionValidator(std::string path, std::vector<ConfigError>* errors)
      : path_(std::move(path)), errors_(errors) {}

  template <class F, class... C>
  void field(const char* name, const F& value, const char* /*doc*/, const C&... checks) {
    std::string path = join_path(path_, name);
    (apply_check(checks, value, path, errors_), ...);
    validate_value(value, path, errors_);
  }

 private:
  std::string path_;
  std::vector<ConfigError>* errors_;
};

template <class T>
void validate_value(const T& value, const std::string& path, std::vector<ConfigError>* errors) {
  if constexpr (IsOptional<T>::value) {
    if (value) validate_value(*value, path, errors);
  } else if constexpr (IsSection<T>::value) {
    SectionValidator validator(path, errors);
    const_cast<T&>(value).visit_fields(validator);  // visit_fields only reads here
    if constexpr (HasValidate<T>::value) {
      Checker checker(path, errors);
      value.validate(checker);
    }
  } else if constexpr (IsVector<T>::value) {
    for (std::size_t i = 0; i < value.size(); ++i) {
      validate_value(value[i], index_path(path, i), errors);
    }
  } else if constexpr (IsStringMap<T>::value) {
    for (const auto& entry : value)
      validate_value(entry.second, join_path(path, entry.first), errors);
  }
}

// Every problem in `options`, by key path.
template <class T>
std::vector<ConfigError> check_config(const T& options) {
  std::vector<ConfigError> errors;
  validate_value(options, "", &errors);
  return errors;
}

// The same as one Status ("key.path: problem" per line); ok if none.
template <class T>
Status validate_config(const T& options) {
  std::vector<ConfigError> errors = check_config(options);
  std::string message;
  for (const auto& error : errors) {
    if (!message.empty()) message += "\n";
    message += error.path + ": " + error.message;
  }
  return errors.empty() ? Status::ok_status() : Status::invalid_argument(message);
}

}  // namespace dice::config
