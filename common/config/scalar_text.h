// Text helpers shared by the config mechanism: strict scalar parsing, number formatting that
// round-trips, and "did you mean" suggestions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace dice::config {

// true/false (also yes/no, on/off, and their Capitalised and UPPER forms, as YAML 1.1 allows).
bool parse_bool_text(const std::string& text, bool* value);

// Decimal integers, optional sign; no spaces, fractions or exponents.
bool parse_int64_text(const std::string& text, std::int64_t* value);
bool parse_uint64_text(const std::string& text, std::uint64_t* value);

// Decimal or exponent notation, and YAML's .inf, -.inf, .nan.
bool parse_double_text(const std::string& text, double* value);

// Edit distance (insertions, deletions, substitutions, swaps of neighbours), on bytes.
std::size_t edit_distance(const std::string& a, const std::string& b);

// The candidate closest to `word` if it is close enough to be a likely typo, else "".
std::string closest_name(const std::string& word, const std::vector<std::string>& candidates);

// "a, b, c"
std::string join_names(const std::vector<std::string>& names);

}  // namespace dice::config
