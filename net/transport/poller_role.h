// Which thread drains a ZeroMQ socket that several threads share: a consumer waiting in the API
// (WorkerConnection::receive(), WorkDispatcher::next_result()) or the connection's background
// thread. Handing every message from a background thread to the consumer costs two thread
// wake-ups per message, which on a small machine was most of a round trip; so a waiting consumer
// reads the socket itself, and the background thread (which also keeps the timers) reads it only
// once no consumer has waited for `grace`, so that heartbeats, credits and acks are still handled
// while the consumer is busy elsewhere.
//
// One holder at a time (it alone sleeps on the socket's descriptor). No locking of its own: every
// call is made under the owner's state mutex. Time comes in as an argument, so tests drive it.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <mutex>

namespace dice::transport {

// How long the background thread leaves the socket to consumers after the last one let go: long
// enough to cover a consumer handling what it just got, short enough that credits and acks that
// arrive while it is busy elsewhere wait little. While consumers come and go, the background
// thread looks once per grace period (a few hundred wake-ups a second at most).
inline constexpr std::chrono::milliseconds kPollerGrace{2};

class PollerRole {
 public:
  using Clock = std::chrono::steady_clock;

  explicit PollerRole(Clock::duration grace) : grace_(grace) {}

  // A consumer that wants input. True: it now holds the role, must drain the socket (sleeping on
  // it if empty), then call release_by_consumer(). False: someone else holds it; wait for them
  // between consumer_waits() and consumer_done_waiting().
  bool take_for_consumer();
  // Returns whether the background thread asked to hear of it (notify it).
  bool release_by_consumer(Clock::time_point now);

  // Consumers blocked on the holder: the background thread hands the role over to them.
  void consumer_waits() { ++waiting_; }
  void consumer_done_waiting() { --waiting_; }
  std::size_t consumers_waiting() const { return waiting_; }

  struct Plan {
    bool poll = false;          // true: the background thread holds the role now
    Clock::time_point until{};  // sleep (on the socket when `poll`) until then at the latest
  };
  // What the background thread does next, at `now`, with its timers next due at `next_tick`.
  Plan plan_background(Clock::time_point now, Clock::time_point next_tick);
  void release_by_background() { held_ = false; }

  bool held() const { return held_; }
  bool held_by_consumer() const { return held_ && !by_background_; }

 private:
  Clock::duration grace_;
  bool held_ = false;
  bool by_background_ = false;
  bool wake_background_ = false;  // the background thread sleeps until a consumer lets go
  std::size_t waiting_ = 0;
  Clock::time_point last_consumer_release_{};
};

// The background thread's loop of either end (WorkDispatcher::run, WorkerConnection::run):
// timers every `tick` (`run_timers(now)` returns false to stop), and the socket whenever the role
// falls to it: `poll(until)` drains it as the holder and returns whether a consumer should be
// woken for what came in. `mutex` guards `role` and `closing`. Returns once stopped with no
// consumer holding the role, so the caller may close the socket.
template <typename RunTimers, typename Poll>
void run_background_loop(PollerRole& role, std::mutex& mutex, const bool& closing,
                         std::condition_variable& background_wake,
                         std::condition_variable& consumer_ready, PollerRole::Clock::duration tick,
                         RunTimers run_timers, Poll poll) {
  auto next_tick = PollerRole::Clock::now();
  while (true) {
    const auto now = PollerRole::Clock::now();
    if (now >= next_tick) {
      if (!run_timers(now)) break;
      next_tick = now + tick;
    }
    {
      std::unique_lock<std::mutex> lock(mutex);
      if (closing) break;
      const PollerRole::Plan plan = role.plan_background(now, next_tick);
      if (!plan.poll) {
        background_wake.wait_until(lock, plan.until);
        continue;
      }
    }
    const bool got_something = poll(next_tick);
    std::lock_guard<std::mutex> lock(mutex);
    role.release_by_background();
    // Wakes a consumer for what came in, or to take the role over: it is waiting for it.
    if (got_something || role.consumers_waiting() > 0) consumer_ready.notify_one();
  }
  // A consumer may still hold the role (close() woke it): the socket closes once it lets go.
  std::unique_lock<std::mutex> lock(mutex);
  background_wake.wait(lock, [&] { return !role.held(); });
}

}  // namespace dice::transport
