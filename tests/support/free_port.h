// free_port(): a TCP port on 127.0.0.1 that nothing listens on now, for a service or daemon a test
// is about to start; 0 if none was found. The port is drawn at random from below the kernel's
// ephemeral range (/proc/sys/net/ipv4/ip_local_port_range): the kernel's own pick for port 0 lies
// inside that range, where any process's next outgoing connection (a ZeroMQ peer of a test running
// beside this one) may take it between this check and the service's bind. Below the range only
// another test's random draw can collide.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <random>

namespace dice::testing_util {

inline bool port_is_free(int port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return false;
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = htons(static_cast<uint16_t>(port));
  const bool free = bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0;
  close(fd);
  return free;
}

inline int kernel_picked_port() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return 0;
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t size = sizeof(address);
  int port = 0;
  if (bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&address), &size) == 0) {
    port = ntohs(address.sin_port);
  }
  close(fd);
  return port;
}

inline int free_port() {
  constexpr int kLowest = 10000;
  int ephemeral_low = 32768;
  std::ifstream range("/proc/sys/net/ipv4/ip_local_port_range");
  if (!(range >> ephemeral_low)) ephemeral_low = 32768;
  if (ephemeral_low - kLowest < 1000) return kernel_picked_port();
  static std::mt19937 draw(
      static_cast<unsigned>(std::chrono::steady_clock::now().time_since_epoch().count()) ^
      (static_cast<unsigned>(getpid()) << 16U));
  std::uniform_int_distribution<int> below_ephemeral(kLowest, ephemeral_low - 1);
  for (int attempt = 0; attempt < 64; ++attempt) {
    const int port = below_ephemeral(draw);
    if (port_is_free(port)) return port;
  }
  return kernel_picked_port();
}

}  // namespace dice::testing_util
