// A file descriptor that other threads poke to wake the thread asleep on a socket (an eventfd),
// and the wait that sleeps on it beside the socket's descriptor. One thread waits at a time (the
// holder of the socket's PollerRole), though not always the same one.
//
// The wait may spin first: it checks both descriptors without sleeping for up to `spin_us`
// microseconds before it sleeps. A message that arrives meanwhile costs no sleep and no wake-up
// (a cross-core wake-up costs the waker and the woken several microseconds each), at the price of
// a core kept busy that long after each message. It pays only where cores are spare, so the
// default (kAutoSpin) spins only where this process may run on 8 or more CPUs.
#pragma once

#include <atomic>

#include "options/cluster_options.h"  // kAutoSpin, the YAML's cluster.transport.poll_spin_us

namespace dice::transport {

// kAutoSpin (options/cluster_options.h) spins kAutoSpinMicros where the process may run on 8 or
// more CPUs, not below; a value of 0 or more is the spin itself.
inline constexpr int kAutoSpinMicros = 50;
// The spin kAutoSpin means on this machine (its CPU affinity, read once).
int resolve_spin_us(int spin_us);

class Wakeup {
 public:
  // Aborts the process if the kernel refuses an eventfd (no fds left). `spin_us`: see above.
  explicit Wakeup(int spin_us = 0);
  ~Wakeup();
  Wakeup(const Wakeup&) = delete;
  Wakeup& operator=(const Wakeup&) = delete;

  int fd() const { return fd_; }
  // Any thread. A poke while one is already pending costs no system call: the waiter has not yet
  // looked at the state the earlier poke was about, so it will see this one's too.
  void notify();
  // The waiting thread: sleeps until `other_fd` is readable, notify() was called, or `timeout_ms`
  // passed; clears the pending poke before returning, so the caller must look at its state after.
  // Spins first (see above; never past the timeout) when timeout_ms is positive.
  void wait(int other_fd, int timeout_ms);

 private:
  int fd_ = -1;
  int spin_us_ = 0;
  std::atomic<bool> pending_{false};
};

}  // namespace dice::transport
