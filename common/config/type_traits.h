// Type predicates the config mechanism dispatches on (decode, encode, validate, describe).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace dice::config {

class Checker;

template <class T>
struct IsVector : std::false_type {};
template <class T, class A>
struct IsVector<std::vector<T, A>> : std::true_type {};

template <class T>
struct IsStringMap : std::false_type {};
template <class T, class C, class A>
struct IsStringMap<std::map<std::string, T, C, A>> : std::true_type {};

template <class T>
struct IsOptional : std::false_type {};
template <class T>
struct IsOptional<std::optional<T>> : std::true_type {};

// An options struct: it declares its fields with `template <class V> void visit_fields(V& v)`.
struct AnyFieldVisitor {
  template <class F, class... C>
  void field(const char*, F&, const char*, const C&...) {}
};
template <class T, class = void>
struct IsSection : std::false_type {};
template <class T>
struct IsSection<
    T, std::void_t<decltype(std::declval<T&>().visit_fields(std::declval<AnyFieldVisitor&>()))>>
    : std::true_type {};

// A section may also check relations between its fields: `void validate(Checker& c) const`.
template <class T, class = void>
struct HasValidate : std::false_type {};
template <class T>
struct HasValidate<
    T, std::void_t<decltype(std::declval<const T&>().validate(std::declval<Checker&>()))>>
    : std::true_type {};

// Integers other than bool (bool is decoded from true/false, not digits).
template <class T>
constexpr bool kIsInteger = std::is_integral_v<T> && !std::is_same_v<T, bool>;

}  // namespace dice::config
