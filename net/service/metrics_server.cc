// The only translation unit that includes Boost.Beast (it is slow to compile).
#include "net/service/metrics_server.h"

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <optional>
#include <thread>

#include "common/log.h"

namespace dice::service {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using Tcp = asio::ip::tcp;

// Scrapes have no body; anything larger is not a request we serve.
constexpr std::uint64_t kBodyLimit = 64 * 1024;
constexpr std::uint32_t kHeaderLimit = 16 * 1024;
constexpr const char* kContentType = "text/plain; version=0.0.4; charset=utf-8";

// One connection: read a request, answer it, repeat while keep-alive holds.
class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(Tcp::socket socket, const MetricsServerOptions& options, const MetricsRegistry* registry)
      : stream_(std::move(socket)), options_(options), registry_(registry) {}

  void read() {
    parser_.emplace();
    parser_->body_limit(kBodyLimit);
    parser_->header_limit(kHeaderLimit);
    stream_.expires_after(std::chrono::milliseconds(options_.idle_timeout_ms));
    http::async_read(stream_, buffer_, *parser_,
                     beast::bind_front_handler(&Session::on_read, shared_from_this()));
  }

 private:
  void on_read(beast::error_code ec, std::size_t) {
    if (ec == http::error::end_of_stream || ec == beast::error::timeout ||
        ec == asio::error::operation_aborted) {
      close();
      return;
    }
    if (ec) {
      if (ec.category() == http::make_error_code(http::error::bad_target).category()) {
        DICE_LOG(Debug) << "metrics: malformed request" << kv("error", ec.message());
        respond(http::status::bad_request, "bad request: " + ec.message() + "\n", 11, false);
      } else {
        close();  // the peer went away mid-request: nobody to answer
      }
      return;
    }
    const auto& request = parser_->get();
    std::string_view target(request.target().data(), request.target().size());
    target = target.substr(0, target.find('?'));
    unsigned version = request.version();
    bool keep_alive = request.keep_alive();
    if (target != "/metrics") {
      respond(http::status::not_found, "not found; try /metrics\n", version, keep_alive);
    } else if (request.method() != http::verb::get) {
      respond(http::status::method_not_allowed, "only GET\n", version, keep_alive);
    } else {
      std::string body;
      try {
        if (options_.before_scrape) options_.before_scrape();
        body = registry_->render();
      } catch (const std::exception& e) {
        DICE_LOG(Error) << "metrics: render failed" << kv("error", e.what());
        respond(http::status::internal_server_error, "render failed\n", version, false);
        return;
      }
      respond(http::status::ok, std::move(body), version, keep_alive);
    }
  }

  void respond(http::status status, std::string body, unsigned version, bool keep_alive) {
    auto response = std::make_shared<http::response<http::string_body>>(status, version);
    response->set(http::field::server, "dice");
    response->set(http::field::content_type,
                  status == http::status::ok ? kContentType : "text/plain; charset=utf-8");
    response->keep_alive(keep_alive);
    response->body() = std::move(body);
    response->prepare_payload();
    stream_.expires_after(std::chrono::milliseconds(options_.idle_timeout_ms));
    http::async_write(stream_, *response,
                      [self = shared_from_this(), response](beast::error_code ec, std::size_t) {
                        self->after_write(ec, response->keep_alive());
                      });
  }

  void after_write(beast::error_code ec, bool keep_alive) {
    if (ec || !keep_alive) {
      close();
      return;
    }
    read();
  }

  void close() {
    beast::error_code ignored;
    stream_.socket().shutdown(Tcp::socket::shutdown_send, ignored);
    stream_.socket().close(ignored);
  }

  beast::tcp_stream stream_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  const MetricsServerOptions& options_;
  const MetricsRegistry* registry_;
};

}  // namespace

struct MetricsServer::Impl {
  MetricsServerOptions options;
  const MetricsRegistry* registry = nullptr;
  // Sessions live in io's pending handlers and read `options`: io goes before options does.
  std::unique_ptr<asio::io_context> io = std::make_unique<asio::io_context>();
  std::optional<Tcp::acceptor> acceptor{std::in_place, *io};
  std::uint16_t port = 0;
  std::thread thread;
  bool stopped = false;

  void accept() {
    acceptor->async_accept([this](beast::error_code ec, Tcp::socket socket) {
      if (ec == asio::error::operation_aborted || !acceptor->is_open()) return;
      if (ec) {
        DICE_LOG(Warn) << "metrics: accept failed" << kv("error", ec.message());
      } else {
        std::make_shared<Session>(std::move(socket), options, registry)->read();
      }
      accept();
    });
  }
};

Result<std::unique_ptr<MetricsServer>> MetricsServer::start(MetricsServerOptions options,
                                                            const MetricsRegistry* registry) {
  if (registry == nullptr) return Status::invalid_argument("metrics server: no registry");
  if (options.idle_timeout_ms <= 0) {
    return Status::invalid_argument("metrics server: idle_timeout_ms must be > 0, got " +
                                    std::to_string(options.idle_timeout_ms));
  }
  auto impl = std::make_unique<Impl>();
  impl->options = std::move(options);
  impl->registry = registry;
  const std::string where = impl->options.host + ":" + std::to_string(impl->options.port);

  beast::error_code ec;
  asio::ip::address address = asio::ip::make_address(impl->options.host, ec);
  if (ec) {
    return Status::invalid_argument("metrics server: host '" + impl->options.host +
                                    "' is not an IP address");
  }
  Tcp::endpoint endpoint(address, impl->options.port);
  impl->acceptor->open(endpoint.protocol(), ec);
  if (!ec) impl->acceptor->set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) impl->acceptor->bind(endpoint, ec);
  if (!ec) impl->acceptor->listen(asio::socket_base::max_listen_connections, ec);
  if (ec)
    return Status::io_error("metrics server: cannot listen on " + where + ": " + ec.message());
  impl->port = impl->acceptor->local_endpoint(ec).port();
  if (ec) return Status::io_error("metrics server: " + where + ": " + ec.message());

  impl->accept();
  Impl* raw = impl.get();
  impl->thread = std::thread([raw] {
    // A handler that throws (it should not) ends the serving, not the process.
    try {
      raw->io->run();
    } catch (const std::exception& e) {
      DICE_LOG(Error) << "metrics: server thread stopped" << kv("error", e.what());
    }
  });
  return std::unique_ptr<MetricsServer>(new MetricsServer(std::move(impl)));
}

MetricsServer::MetricsServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

MetricsServer::~MetricsServer() {
  stop();
}

std::uint16_t MetricsServer::port() const {
  return impl_->port;
}

const std::string& MetricsServer::host() const {
  return impl_->options.host;
}

void MetricsServer::stop() {
  if (impl_->stopped) return;
  impl_->stopped = true;
  impl_->io->stop();
  if (impl_->thread.joinable()) impl_->thread.join();
  // With the thread gone nothing runs handlers: close the listener, then destroy the context,
  // which destroys the pending handlers and with them every open connection.
  impl_->acceptor.reset();
  impl_->io.reset();
}

}  // namespace dice::service
