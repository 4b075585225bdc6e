// eventually(): polls a condition that another thread or process makes true (a worker that
// registers, a message that arrives) until it holds or `limit` passes, every 5 ms; the last
// check comes after the limit, so a condition that holds by then counts.
#pragma once

#include <chrono>
#include <functional>
#include <thread>

namespace dice::testing_util {

inline bool eventually(const std::function<bool()>& condition,
                       std::chrono::milliseconds limit = std::chrono::seconds(20)) {
  const auto end = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < end) {
    if (condition()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return condition();
}

}  // namespace dice::testing_util
