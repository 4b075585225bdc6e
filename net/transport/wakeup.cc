#include "net/transport/wakeup.h"

#include <poll.h>
#include <sched.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace dice::transport {

int resolve_spin_us(int spin_us) {
  if (spin_us != kAutoSpin) return spin_us < 0 ? 0 : spin_us;
  static const int kCpus = [] {
    cpu_set_t set;
    CPU_ZERO(&set);
    return sched_getaffinity(0, sizeof(set), &set) == 0 ? CPU_COUNT(&set) : 1;
  }();
  return kCpus >= 8 ? kAutoSpinMicros : 0;
}

Wakeup::Wakeup(int spin_us)
    : fd_(eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)), spin_us_(resolve_spin_us(spin_us)) {
  if (fd_ < 0) {
    std::fprintf(stderr, "dice: eventfd failed: %s\n", std::strerror(errno));
    std::abort();
  }
}

Wakeup::~Wakeup() {
  close(fd_);
}

void Wakeup::notify() {
  if (pending_.exchange(true)) return;
  const std::uint64_t one = 1;
  // EAGAIN means the counter is saturated: the loop is already due to wake.
  [[maybe_unused]] ssize_t n = write(fd_, &one, sizeof(one));
}

void Wakeup::wait(int other_fd, int timeout_ms) {
  pollfd fds[2] = {{other_fd, POLLIN, 0}, {fd_, POLLIN, 0}};
  int ready = 0;
  if (spin_us_ > 0 && timeout_ms > 0 && !pending_.load()) {
    // Never longer than the timeout: a spin past it would delay the caller's timers.
    using Clock = std::chrono::steady_clock;
    const auto start = Clock::now();
    const auto spin = std::min<std::chrono::microseconds>(std::chrono::microseconds(spin_us_),
                                                          std::chrono::milliseconds(timeout_ms));
    auto spun = Clock::duration::zero();
    while (!pending_.load() && (ready = poll(fds, 2, 0)) == 0 && spun < spin) {
      spun = Clock::now() - start;
    }
    const auto spun_ms = std::chrono::duration_cast<std::chrono::milliseconds>(spun).count();
    timeout_ms = static_cast<int>(std::max<std::int64_t>(0, timeout_ms - spun_ms));
  }
  // EINTR: the caller's loop comes back.
  if (ready == 0 && !pending_.load()) poll(fds, 2, timeout_ms);
  // Also read when only the fd says so: a notify() may write after an earlier read cleared it.
  if (pending_.load() || (fds[1].revents & POLLIN)) {
    std::uint64_t value = 0;
    [[maybe_unused]] ssize_t n = read(fd_, &value, sizeof(value));
    // After the read: a poke between the read and this store finds pending_ set and writes
    // nothing, which is safe because the caller looks at its state after this returns.
    pending_.store(false);
  }
}

}  // namespace dice::transport
