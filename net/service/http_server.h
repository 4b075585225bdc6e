// HttpServer: a small HTTP/1.1 server (Boost.Beast) that hands each request to one handler
// function and writes back what it returns, on one background thread. The services' /metrics
// (metrics_server.h) and dice-dash (tools/dice-dash/dashboard.h) are handlers over it; Beast
// stays inside http_server.cc.
//
//   DICE_ASSIGN_OR_RETURN(auto server, HttpServer::start(options, [](const HttpRequest& r) {
//     return HttpResponse{200, "text/plain; charset=utf-8", "hello\n"};
//   }));
//
// One thread serves every connection, so the handler never runs twice at once and needs no
// locks. Keep-alive is honoured; a connection with no complete request for idle_timeout_ms is
// closed; a request that does not parse, or whose path or query has a bad percent escape, gets
// 400 and (for one that does not parse) the connection closes. A handler that throws answers 500.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "common/status.h"

namespace dice::service {

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
  bool close = false;  // close the connection after this response, whatever keep-alive says
};

using HttpHandler = std::function<HttpResponse(const HttpRequest&)>;

struct HttpServerOptions {
  // Address to bind: an IPv4 or IPv6 literal. Default: 127.0.0.1 (only this machine)
  std::string host = "127.0.0.1";
  // TCP port; 0 = an ephemeral port, see HttpServer::port(). Default: 0
  std::uint16_t port = 0;
  // A connection with no complete request for this long is closed. Default: 10000
  int idle_timeout_ms = 10000;
  // The Server header of every response, and the name in the server's log lines. Default: dice
  std::string name = "dice";
  // A request body beyond this many bytes is a bad request (400). Default: 65536
  std::uint64_t body_limit = 64 * 1024;
};

class HttpServer {
 public:
  // Binds and starts serving on its thread. InvalidArgument for a host that is not an IP
  // literal or a non-positive idle timeout; IOError naming host:port when the bind fails.
  static Result<std::unique_ptr<HttpServer>> start(HttpServerOptions options, HttpHandler handler);
  ~HttpServer();  // stop()
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // The port actually bound (the ephemeral one for port 0).
  std::uint16_t port() const;
  const std::string& host() const;

  // Closes the listener and every connection and joins the thread; idempotent.
  void stop();

 private:
  struct Impl;
  explicit HttpServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// Percent-decoding of a URL part ('+' is a space in a query); InvalidArgument for a bad escape.
Result<std::string> url_decode(const std::string& text, bool query_part);
// "a=1&b=x%20y" -> {a: 1, b: "x y"}; InvalidArgument naming the bad parameter.
Result<std::map<std::string, std::string>> parse_query(const std::string& query);

}  // namespace dice::service
