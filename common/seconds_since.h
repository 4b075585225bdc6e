// Seconds on the steady clock since `start`, as the timings in verdicts and logs count them.
#pragma once

#include <chrono>

namespace dice {

inline double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace dice
