// Value helpers shared by the schema fixture files: field values that are distinct per (salt,
// field number) and never a schema default.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "tests/schemas/schema_fixtures.h"

namespace dice::test {

// Field values: distinct per (salt, field number k) and never a schema default.
inline std::uint64_t u64(std::uint32_t salt, int k) {
  return std::uint64_t{salt} * 1000003u + 7u * k + 1;
}
inline std::uint32_t u32(std::uint32_t salt, int k) {
  return salt * 101u + 3u * k + 1;
}
inline std::int64_t i64(std::uint32_t salt, int k) {
  return 1'800'000'000'000 + salt * 1000 + k;
}
inline float f32(std::uint32_t salt, int k) {
  return 0.125f + static_cast<float>(salt % 1000) + k * 0.25f;
}
inline std::string txt(const char* field, std::uint32_t salt) {
  return fixture_text(field, salt);
}

inline std::vector<std::uint32_t> tokens(std::uint32_t salt, int n) {
  std::vector<std::uint32_t> out;
  for (int i = 0; i < n; ++i) out.push_back(151000 + (salt * 31 + i * 17) % 900);
  return out;
}

// n rising byte offsets (per-token text ends), distinct per salt.
inline std::vector<std::uint32_t> ends_of(std::uint32_t salt, int n = 9) {
  std::vector<std::uint32_t> out;
  for (int i = 0; i < n; ++i) out.push_back(salt % 7 + 3 * (i + 1));
  return out;
}

template <typename ListBuilder, typename Vec>
void set_list(ListBuilder list, const Vec& values) {
  for (unsigned i = 0; i < values.size(); ++i) list.set(i, values[i]);
}

template <typename ListReader, typename Vec>
void expect_list(ListReader list, const Vec& values, const char* what) {
  ASSERT_EQ(list.size(), values.size()) << what;
  for (unsigned i = 0; i < values.size(); ++i)
    EXPECT_EQ(list[i], values[i]) << what << "[" << i << "]";
}

}  // namespace dice::test
