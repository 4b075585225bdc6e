// A file descriptor that other threads poke to wake a poll loop (an eventfd); zmq_poll watches it
// beside the sockets, so no ZeroMQ socket is ever shared between threads.
#pragma once

namespace dice::transport {

class Wakeup {
 public:
  Wakeup();  // aborts the process if the kernel refuses an eventfd (no fds left)
  ~Wakeup();
  Wakeup(const Wakeup&) = delete;
  Wakeup& operator=(const Wakeup&) = delete;

  int fd() const { return fd_; }
  void notify();  // any thread
  void drain();   // the polling thread, after the fd polled readable

 private:
  int fd_ = -1;
};

}  // namespace dice::transport
