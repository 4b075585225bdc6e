#include "common/transport/wakeup.h"

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
  const std::uint64_t one = 1;
  // EAGAIN means the counter is saturated: the loop is already due to wake.
  [[maybe_unused]] ssize_t n = write(fd_, &one, sizeof(one));
}

void Wakeup::drain() {
  std::uint64_t value = 0;
  [[maybe_unused]] ssize_t n = read(fd_, &value, sizeof(value));
}

}  // namespace dice::transport
