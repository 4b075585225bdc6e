// The schema name of a Cap'n Proto enum value ("compileError" for FailureClass::COMPILE_ERROR),
// for logs, metrics labels and tools; the ordinal as text for a value this build does not know.
#pragma once

#include <capnp/schema.h>

#include <cstdint>
#include <string>

namespace dice::wire {

template <typename E>
std::string enum_name(E value) {
  const auto enumerants = capnp::Schema::from<E>().getEnumerants();
  const auto raw = static_cast<std::uint16_t>(value);
  if (raw < enumerants.size()) return enumerants[raw].getProto().getName().cStr();
  return std::to_string(raw);
}

}  // namespace dice::wire
