// ShutdownSignal: SIGTERM/SIGINT turned into something a service loop can poll or wait on.
//
//   DICE_ASSIGN_OR_RETURN(auto shutdown, ShutdownSignal::install());
//   while (!shutdown->requested()) { ...take and finish one item... }
//   // drain: finish what is in flight, flush, then return from main with 0.
//
// The signal handler only writes the signal number to a self-pipe (async-signal-safe); a watcher
// thread reads it and does the rest: the first signal sets requested(), wakes every waiter and runs
// the callbacks; a second one (the operator insists) ends the process at once with 128 + signal.
// One instance may be installed per process at a time; the destructor puts the previous handlers
// back.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/status.h"

namespace dice::service {

class ShutdownSignal {
 public:
  // Installs handlers for SIGTERM and SIGINT. Unavailable when another ShutdownSignal is live;
  // IOError when the pipe, the handlers or the thread cannot be set up.
  static Result<std::unique_ptr<ShutdownSignal>> install();
  ~ShutdownSignal();
  ShutdownSignal(const ShutdownSignal&) = delete;
  ShutdownSignal& operator=(const ShutdownSignal&) = delete;

  // True once a signal came or request() was called.
  bool requested() const { return requested_.load(std::memory_order_acquire); }

  // Waits up to `timeout` for a shutdown request; returns requested().
  bool wait_for(std::chrono::milliseconds timeout);
  void wait();

  // Asks for shutdown without a signal (e.g. the learner sent a Shutdown message); `reason` goes
  // to the log. A second call does nothing.
  void request(const std::string& reason);

  // The signal that asked for shutdown (SIGTERM, SIGINT), or 0 for request() or none yet.
  int signal_number() const { return signal_number_.load(std::memory_order_acquire); }

  // Becomes readable (and stays so) once shutdown is requested: for poll()/zmq_poll() loops.
  int poll_fd() const { return notify_pipe_[0]; }

  // Runs `callback` once shutdown is requested, on the thread that asks (the watcher thread for a
  // signal), or at once if it already was: the place to close() queues so that blocked waiters
  // wake up. Keep it short.
  void on_shutdown(std::function<void()> callback);

 private:
  ShutdownSignal() = default;
  void watch();
  void trigger(int signal_number, const std::string& reason);

  int signal_pipe_[2] = {-1, -1};  // handler -> watcher: one byte per signal
  int notify_pipe_[2] = {-1, -1};  // readable once requested
  std::atomic<bool> requested_{false};
  std::atomic<int> signal_number_{0};
  std::mutex mutex_;
  std::condition_variable requested_cv_;
  std::vector<std::function<void()>> callbacks_;  // guarded by mutex_
  std::thread watcher_;
  bool handlers_installed_ = false;
};

}  // namespace dice::service
