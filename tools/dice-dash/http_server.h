// HttpServer: a small HTTP/1.1 server (Boost.Beast) that hands each GET to one handler function
// and writes back what it returns. dice-dash's only network code; Beast stays inside
// http_server.cc.
//
// One thread (the caller of run()) serves every connection, so the handler never runs twice at
// once and needs no locks. Keep-alive is honoured; a connection with no complete request for
// idle_timeout_ms is closed; a request that does not parse gets 400 and the connection closes.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/status.h"

namespace dice::dash {

struct HttpRequest {
  std::string method;                        // "GET", "POST", ...
  std::string path;                          // the target before '?', percent-decoded
  std::map<std::string, std::string> query;  // the target's parameters, percent-decoded
  std::string authorization;                 // the Authorization header, as sent
  std::string cookie;                        // the Cookie header, as sent
};

struct HttpResponse {
  int status = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;  // extra headers (Set-Cookie, ...)
};

using HttpHandler = std::function<HttpResponse(const HttpRequest&)>;

struct HttpServerOptions {
  // Address to bind: an IPv4 or IPv6 literal. Default: 127.0.0.1 (only this machine)
  std::string bind_address = "127.0.0.1";
  // TCP port; 0 = an ephemeral port, see HttpServer::port(). Default: 0
  uint16_t port = 0;
  // A connection with no complete request for this long is closed. Default: 30000
  int idle_timeout_ms = 30000;
};

class HttpServer {
 public:
  // Binds and listens. InvalidArgument for an address that is not an IP literal; IOError naming
  // address:port when the bind fails.
  static Result<std::unique_ptr<HttpServer>> listen(const HttpServerOptions& options,
                                                    HttpHandler handler);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  uint16_t port() const;
  // Serves until SIGINT or SIGTERM arrives, then closes every connection and returns.
  void run();

 private:
  struct Impl;
  explicit HttpServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// Percent-decoding of a URL part ('+' is a space in a query); InvalidArgument for a bad escape.
Result<std::string> url_decode(const std::string& text, bool query_part);
// "a=1&b=x%20y" -> {a: 1, b: "x y"}; InvalidArgument naming the bad parameter.
Result<std::map<std::string, std::string>> parse_query(const std::string& query);

}  // namespace dice::dash
