// MetricsServer: GET /metrics over HTTP/1.1 for Prometheus, on one background thread.
//
//   MetricsServerOptions options;  // 127.0.0.1:0 = any free port
//   DICE_ASSIGN_OR_RETURN(auto server, MetricsServer::start(options, &registry));
//   DICE_LOG(Info) << "metrics" << kv("port", server->port());
//
// GET /metrics (a query string is ignored) -> 200 with registry.render();
// another path -> 404; another method on /metrics -> 405; a request that does not parse -> 400
// and the connection closes. Keep-alive is honoured; an idle or slow connection is closed after
// options.idle_timeout_ms. The serving is HttpServer's (http_server.h); this is its handler.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "common/status.h"
#include "net/service/metrics_registry.h"

namespace dice::service {

// Where and how the metrics endpoint listens.
struct MetricsServerOptions {
  // Address to bind (IPv4 or IPv6 literal). Default: 127.0.0.1 (use 0.0.0.0 for scrapes from
  // other hosts)
  std::string host = "127.0.0.1";
  // TCP port; 0 = an ephemeral port, see MetricsServer::port(). Default: 0
  std::uint16_t port = 0;
  // A connection with no complete request for this long is closed. Default: 10000
  int idle_timeout_ms = 10000;
  // Called before each /metrics render, on the server thread: the place to copy stats snapshots
  // into the registry (export_dispatcher_stats). Default: none
  std::function<void()> before_scrape;
};

class MetricsServer {
 public:
  // Binds and starts serving `registry`, which must outlive the server. InvalidArgument for a
  // host that is not an IP address; IOError naming host:port when the bind fails.
  static Result<std::unique_ptr<MetricsServer>> start(MetricsServerOptions options,
                                                      const MetricsRegistry* registry);
  ~MetricsServer();  // stop()
  MetricsServer(const MetricsServer&) = delete;
  MetricsServer& operator=(const MetricsServer&) = delete;

  // The port actually bound (the ephemeral one for port 0).
  std::uint16_t port() const;
  const std::string& host() const;

  // Closes the listener and every connection and joins the thread; idempotent.
  void stop();

 private:
  struct Impl;
  explicit MetricsServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace dice::service
