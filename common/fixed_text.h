// A number as log lines show it: a fixed count of digits after the point, for the values a person
// reads (rates, seconds, a pass-rate band), where the shortest round-trip form of a double
// ("0.30000000000000004") would not do.
#pragma once

#include <iomanip>
#include <sstream>
#include <string>

namespace dice {

// `value` with `digits` digits after the point, rounded: fixed_text(0.126, 2) == "0.13",
// fixed_text(2, 1) == "2.0".
inline std::string fixed_text(double value, int digits) {
  std::ostringstream out;
  out << std::fixed << std::setprecision(digits) << value;
  return out.str();
}

}  // namespace dice
