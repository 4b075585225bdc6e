#include "common/transport/wakeup.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace dice::transport {

Wakeup::Wakeup() : fd_(eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) {
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
  if (!pending_.load()) poll(fds, 2, timeout_ms);  // EINTR: the caller's loop comes back
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
