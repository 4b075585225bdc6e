#include "net/service/metrics_server.h"

#include <exception>

#include "common/log.h"
#include "net/service/http_server.h"

namespace dice::service {
namespace {

constexpr const char* kContentType = "text/plain; version=0.0.4; charset=utf-8";

HttpResponse text(int status, std::string body) {
  HttpResponse response;
  response.status = status;
  response.body = std::move(body);
  return response;
}

// GET /metrics: the registry in Prometheus' text format, after options.before_scrape.
HttpResponse scrape(const HttpRequest& request, const MetricsServerOptions& options,
                    const MetricsRegistry& registry) {
  if (request.path != "/metrics") return text(404, "not found; try /metrics\n");
  if (request.method != "GET") return text(405, "only GET\n");
  HttpResponse response;
  try {
    if (options.before_scrape) options.before_scrape();
    response.body = registry.render();
  } catch (const std::exception& e) {
    DICE_LOG(Error) << "metrics: render failed" << kv("error", e.what());
    HttpResponse failed = text(500, "render failed\n");
    failed.close = true;
    return failed;
  }
  response.content_type = kContentType;
  return response;
}

}  // namespace

struct MetricsServer::Impl {
  MetricsServerOptions options;
  std::unique_ptr<HttpServer> server;
};

Result<std::unique_ptr<MetricsServer>> MetricsServer::start(MetricsServerOptions options,
                                                            const MetricsRegistry* registry) {
  if (registry == nullptr) return Status::invalid_argument("metrics server: no registry");
  auto impl = std::make_unique<Impl>();
  impl->options = std::move(options);
  HttpServerOptions http;
  http.host = impl->options.host;
  http.port = impl->options.port;
  http.idle_timeout_ms = impl->options.idle_timeout_ms;
  http.name = "metrics";
  // The handler reads impl's options, which live as long as the server (stopped before them).
  const MetricsServerOptions* scrape_options = &impl->options;
  auto server =
      HttpServer::start(std::move(http), [scrape_options, registry](const HttpRequest& r) {
        return scrape(r, *scrape_options, *registry);
      });
  if (!server.ok()) return server.status().with_context("metrics server");
  impl->server = std::move(server).value();
  return std::unique_ptr<MetricsServer>(new MetricsServer(std::move(impl)));
}

MetricsServer::MetricsServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

MetricsServer::~MetricsServer() {
  stop();
}

std::uint16_t MetricsServer::port() const {
  return impl_->server->port();
}

const std::string& MetricsServer::host() const {
  return impl_->options.host;
}

void MetricsServer::stop() {
  impl_->server->stop();
}

}  // namespace dice::service
