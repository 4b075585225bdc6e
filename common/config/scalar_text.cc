#include "common/config/scalar_text.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <utility>

#include "common/config/field_checks.h"

namespace dice::config {

bool parse_bool_text(const std::string& text, bool* value) {
  static const char* const kTrue[] = {"true", "True", "TRUE", "yes", "Yes",
                                      "YES",  "on",   "On",   "ON"};
  static const char* const kFalse[] = {"false", "False", "FALSE", "no", "No",
                                       "NO",    "off",   "Off",   "OFF"};
  for (const char* t : kTrue) {
    if (text == t) {
      *value = true;
      return true;
    }
  }
  for (const char* f : kFalse) {
    if (text == f) {
      *value = false;
      return true;
    }
  }
  return false;
}

namespace {

// Digits only after an optional sign: strtoll alone would accept spaces, "0x" and trailing junk.
bool is_decimal_integer(const std::string& text, bool allow_minus) {
  std::size_t i = 0;
  if (i < text.size() && (text[i] == '+' || (allow_minus && text[i] == '-'))) ++i;
  if (i == text.size()) return false;
  for (; i < text.size(); ++i) {
    if (text[i] < '0' || text[i] > '9') return false;
  }
  return true;
}

}  // namespace

bool parse_int64_text(const std::string& text, std::int64_t* value) {
  if (!is_decimal_integer(text, true)) return false;
  errno = 0;
  long long v = std::strtoll(text.c_str(), nullptr, 10);
  if (errno == ERANGE) return false;
  *value = v;
  return true;
}

bool parse_uint64_text(const std::string& text, std::uint64_t* value) {
  if (!is_decimal_integer(text, false)) return false;
  errno = 0;
  unsigned long long v = std::strtoull(text.c_str(), nullptr, 10);
  if (errno == ERANGE) return false;
  *value = v;
  return true;
}

bool parse_double_text(const std::string& text, double* value) {
  if (text == ".inf" || text == ".Inf" || text == ".INF" || text == "+.inf") {
    *value = std::numeric_limits<double>::infinity();
    return true;
  }
  if (text == "-.inf" || text == "-.Inf" || text == "-.INF") {
    *value = -std::numeric_limits<double>::infinity();
    return true;
  }
  if (text == ".nan" || text == ".NaN" || text == ".NAN") {
    *value = std::numeric_limits<double>::quiet_NaN();
    return true;
  }
  // strtod also takes "inf", "nan", hex floats and leading spaces; YAML does not, so neither do we.
  if (text.empty()) return false;
  for (char c : text) {
    bool allowed =
        (c >= '0' && c <= '9') || c == '.' || c == '-' || c == '+' || c == 'e' || c == 'E';
    if (!allowed) return false;
  }
  char* end = nullptr;
  errno = 0;
  double v = std::strtod(text.c_str(), &end);
  if (end != text.c_str() + text.size() || errno == ERANGE) return false;
  *value = v;
  return true;
}

namespace {

// The fewest significant digits (1..max_digits) whose %g text reads back as `value` under
// `read_back`; integers below 1e15 are written out in full ("10", not "1e+01").
template <class Number, class ReadBack>
std::string shortest_text(Number value, int max_digits, ReadBack read_back) {
  if (std::isnan(value)) return ".nan";
  if (std::isinf(value)) return value > 0 ? ".inf" : "-.inf";
  char buf[48];
  int precision = 1;
  for (; precision <= max_digits; ++precision) {
    std::snprintf(buf, sizeof buf, "%.*g", precision, static_cast<double>(value));
    if (read_back(buf) == value) break;
  }
  double magnitude = std::fabs(static_cast<double>(value));
  if (magnitude >= 1 && magnitude < 1e15) {
    int exponent = static_cast<int>(std::floor(std::log10(magnitude)));
    if (precision <= exponent) {
      std::snprintf(buf, sizeof buf, "%.*g", exponent + 1, static_cast<double>(value));
    }
  }
  return buf;
}

}  // namespace

std::string format_number(double value) {
  return shortest_text(value, 17, [](const char* text) { return std::strtod(text, nullptr); });
}

std::string format_number(float value) {
  return shortest_text(value, 9, [](const char* text) { return std::strtof(text, nullptr); });
}

std::size_t edit_distance(const std::string& a, const std::string& b) {
  // Optimal string alignment: Levenshtein plus swapping two neighbours ("cuont" -> "count"), the
  // most common typo, as one edit. Three rows: two back for the swap.
  std::vector<std::size_t> before(b.size() + 1), previous(b.size() + 1), current(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) previous[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    current[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      std::size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      current[j] = std::min({previous[j] + 1, current[j - 1] + 1, previous[j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) {
        current[j] = std::min(current[j], before[j - 2] + 1);
      }
    }
    std::swap(before, previous);
    std::swap(previous, current);
  }
  return previous[b.size()];
}

std::string closest_name(const std::string& word, const std::vector<std::string>& candidates) {
  // Short words allow one edit, longer ones two or three: enough for typos, not so many that
  // unrelated keys are suggested.
  std::size_t limit = word.size() <= 3 ? 1 : word.size() <= 8 ? 2 : 3;
  std::string best;
  std::size_t best_distance = limit + 1;
  for (const auto& candidate : candidates) {
    std::size_t d = edit_distance(word, candidate);
    if (d < best_distance) {
      best_distance = d;
      best = candidate;
    }
  }
  return best;
}

std::string join_names(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& name : names) {
    if (!out.empty()) out += ", ";
    out += name;
  }
  return out;
}

std::string NumberRange::describe() const {
  bool has_lo = std::isfinite(lo);
  bool has_hi = std::isfinite(hi);
  if (has_lo && has_hi) {
    return std::string("in ") + (lo_inclusive ? "[" : "(") + format_number(lo) + ", " +
           format_number(hi) + (hi_inclusive ? "]" : ")");
  }
  if (has_lo) return (lo_inclusive ? ">= " : "> ") + format_number(lo);
  if (has_hi) return (hi_inclusive ? "<= " : "< ") + format_number(hi);
  return "any number";
}

std::string OneOf::check(const std::string& value) const {
  for (const auto& name : names) {
    if (value == name) return "";
  }
  std::string message = "must be one of " + join_names(names) + ", got '" + value + "'";
  std::string guess = closest_name(value, names);
  if (!guess.empty()) message += " (did you mean '" + guess + "'?)";
  return message;
}

std::string OneOf::describe() const {
  return "one of " + join_names(names);
}

}  // namespace dice::config
