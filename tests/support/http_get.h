// http_get(): one HTTP/1.1 request to a server a test started on 127.0.0.1, over a plain socket
// (Connection: close), so a test checks what any client would see.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string>
#include <vector>

namespace dice::testing_util {

struct HttpResult {
  int status = 0;
  std::string headers;
  std::string body;
};

// GET `target` from 127.0.0.1:port; status 0 when nothing answers.
inline HttpResult http_get(int port, const std::string& target,
                           const std::vector<std::string>& extra_headers = {},
                           const std::string& method = "GET") {
  HttpResult result;
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0) {
    close(fd);
    return result;
  }
  std::string request = method + " " + target + " HTTP/1.1\r\nHost: 127.0.0.1\r\n";
  for (const std::string& h : extra_headers) request += h + "\r\n";
  request += "Connection: close\r\n\r\n";
  if (write(fd, request.data(), request.size()) != static_cast<ssize_t>(request.size())) {
    close(fd);
    return result;
  }
  std::string response;
  char buffer[65536];
  for (ssize_t n; (n = read(fd, buffer, sizeof(buffer))) > 0;) response.append(buffer, n);
  close(fd);
  const size_t end = response.find("\r\n\r\n");
  if (response.rfind("HTTP/1.1 ", 0) != 0 || end == std::string::npos) return result;
  result.status = std::stoi(response.substr(9, 3));
  result.headers = response.substr(0, end);
  result.body = response.substr(end + 4);
  return result;
}

}  // namespace dice::testing_util
