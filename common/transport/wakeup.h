// A file descriptor that other threads poke to wake the thread asleep on a socket (an eventfd),
// and the wait that sleeps on it beside the socket's descriptor. One thread waits at a time (the
// holder of the socket's PollerRole), though not always the same one.
#pragma once

#include <atomic>

namespace dice::transport {

class Wakeup {
 public:
  Wakeup();  // aborts the process if the kernel refuses an eventfd (no fds left)
  ~Wakeup();
  Wakeup(const Wakeup&) = delete;
  Wakeup& operator=(const Wakeup&) = delete;

  int fd() const { return fd_; }
  // Any thread. A poke while one is already pending costs no system call: the waiter has not yet
  // looked at the state the earlier poke was about, so it will see this one's too.
  void notify();
  // The waiting thread: sleeps until `other_fd` is readable, notify() was called, or `timeout_ms`
  // passed; clears the pending poke before returning, so the caller must look at its state after.
  void wait(int other_fd, int timeout_ms);

 private:
  int fd_ = -1;
  std::atomic<bool> pending_{false};
};

}  // namespace dice::transport
