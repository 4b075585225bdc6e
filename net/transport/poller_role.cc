#include "net/transport/poller_role.h"

#include <algorithm>

namespace dice::transport {

bool PollerRole::take_for_consumer() {
  if (held_) return false;
  held_ = true;
  by_background_ = false;
  return true;
}

bool PollerRole::release_by_consumer(Clock::time_point now) {
  held_ = false;
  last_consumer_release_ = now;
  const bool wake = wake_background_;
  wake_background_ = false;
  return wake;
}

PollerRole::Plan PollerRole::plan_background(Clock::time_point now, Clock::time_point next_tick) {
  if (held_) {
    // A consumer polls. One that comes and goes (a message each time) is checked on every grace
    // period; one that has waited a whole period is idle, and says when it lets go. Being told of
    // every release instead would cost a wake-up per message again.
    if (now - last_consumer_release_ < grace_)
      return Plan{false, std::min(now + grace_, next_tick)};
    wake_background_ = true;
    return Plan{false, next_tick};
  }
  const Clock::time_point grace_ends = last_consumer_release_ + grace_;
  if (waiting_ > 0 || now < grace_ends) {
    // A consumer is about to take the role, or is likely back soon: a consumer between two calls
    // (handling what it got) must not find the socket taken, or each message costs a hand-off.
    return Plan{false, std::min(waiting_ > 0 ? now + grace_ : grace_ends, next_tick)};
  }
  held_ = true;
  by_background_ = true;
  return Plan{true, next_tick};
}

}  // namespace dice::transport
