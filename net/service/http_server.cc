// The only translation unit that includes Boost.Beast (it is slow to compile).
#include "net/service/http_server.h"

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

constexpr std::uint32_t kHeaderLimit = 16 * 1024;

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

HttpResponse text_response(int status, const std::string& text) {
  HttpResponse response;
  response.status = status;
  response.body = text + "\n";
  return response;
}

// One client connection: read a request, call the handler, write, repeat while keep-alive.
class Connection : public std::enable_shared_from_this<Connection> {
 public:
  Connection(Tcp::socket socket, const HttpServerOptions& options, const HttpHandler& handler)
      : stream_(std::move(socket)),
        options_(options),
        handler_(handler),
        idle_(options.idle_timeout_ms) {}

  void next_request() {
    parser_.emplace();
    parser_->body_limit(options_.body_limit);
    parser_->header_limit(kHeaderLimit);
    stream_.expires_after(idle_);
    http::async_read(
        stream_, buffer_, *parser_,
        [self = shared_from_this()](beast::error_code ec, std::size_t) { self->serve(ec); });
  }

 private:
  void serve(beast::error_code ec) {
    if (ec) {
      // A request that does not parse gets an answer; a peer that left or idled does not.
      const bool malformed =
          ec.category() == http::make_error_code(http::error::bad_target).category() &&
          ec != http::error::end_of_stream;
      if (malformed) {
        DICE_LOG(Debug) << options_.name << ": malformed request" << kv("error", ec.message());
        HttpResponse response = text_response(400, "bad request: " + ec.message());
        response.close = true;
        write(std::move(response), 11, false);
      } else {
        close();
      }
      return;
    }
    const auto& message = parser_->get();
    HttpResponse response = answer(message);
    write(std::move(response), message.version(), message.keep_alive());
  }

  HttpResponse answer(const http::request<http::string_body>& message) {
    const std::string target(message.target());
    const std::size_t question = target.find('?');
    auto path = url_decode(target.substr(0, question), false);
    if (!path.ok()) return text_response(400, "bad request: path: " + path.status().message());
    HttpRequest request;
    request.method = std::string(message.method_string());
    request.path = path.value();
    if (question != std::string::npos) {
      auto query = parse_query(target.substr(question + 1));
      if (!query.ok()) return text_response(400, "bad request: " + query.status().message());
      request.query = std::move(query).value();
    }
    request.authorization = std::string(message[http::field::authorization]);
    request.cookie = std::string(message[http::field::cookie]);
    try {
      return handler_(request);
    } catch (const std::exception& e) {
      DICE_LOG(Error) << options_.name << ": request failed" << kv("path", request.path)
                      << kv("error", e.what());
      return text_response(500, std::string("internal error: ") + e.what());
    }
  }

  void write(HttpResponse response, unsigned version, bool keep_alive) {
    auto out = std::make_shared<http::response<http::string_body>>(
        static_cast<http::status>(response.status), version);
    out->set(http::field::server, options_.name);
    out->set(http::field::content_type, response.content_type);
    for (const auto& [name, value] : response.headers) out->set(name, value);
    out->keep_alive(keep_alive && !response.close);
    out->body() = std::move(response.body);
    out->prepare_payload();
    stream_.expires_after(idle_);
    http::async_write(stream_, *out,
                      [self = shared_from_this(), out](beast::error_code ec, std::size_t) {
                        if (ec || !out->keep_alive()) {
                          self->close();
                        } else {
                          self->next_request();
                        }
                      });
  }

  void close() {
    beast::error_code ignored;
    stream_.socket().shutdown(Tcp::socket::shutdown_send, ignored);
    stream_.socket().close(ignored);
  }

  beast::tcp_stream stream_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  const HttpServerOptions& options_;
  const HttpHandler& handler_;
  std::chrono::milliseconds idle_;
};

}  // namespace

struct HttpServer::Impl {
  HttpServerOptions options;
  HttpHandler handler;
  // Connections live in io's pending handlers and read `options` and `handler`: io goes before
  // they do.
  std::unique_ptr<asio::io_context> io = std::make_unique<asio::io_context>();
  std::optional<Tcp::acceptor> acceptor{std::in_place, *io};
  std::uint16_t port = 0;
  std::thread thread;
  bool stopped = false;

  void accept() {
    acceptor->async_accept([this](beast::error_code ec, Tcp::socket socket) {
      if (ec == asio::error::operation_aborted || !acceptor->is_open()) return;
      if (ec) {
        DICE_LOG(Warn) << options.name << ": accept failed" << kv("error", ec.message());
      } else {
        std::make_shared<Connection>(std::move(socket), options, handler)->next_request();
      }
      accept();
    });
  }
};

Result<std::unique_ptr<HttpServer>> HttpServer::start(HttpServerOptions options,
                                                      HttpHandler handler) {
  if (!handler) return Status::invalid_argument("http server: no handler");
  if (options.idle_timeout_ms <= 0) {
    return Status::invalid_argument("idle_timeout_ms must be > 0, got " +
                                    std::to_string(options.idle_timeout_ms));
  }
  auto impl = std::make_unique<Impl>();
  impl->options = std::move(options);
  impl->handler = std::move(handler);
  const HttpServerOptions& o = impl->options;
  const std::string where = o.host + ":" + std::to_string(o.port);

  beast::error_code ec;
  const asio::ip::address address = asio::ip::make_address(o.host, ec);
  if (ec) return Status::invalid_argument("bind address '" + o.host + "' is not an IP address");
  const Tcp::endpoint endpoint(address, o.port);
  impl->acceptor->open(endpoint.protocol(), ec);
  if (!ec) impl->acceptor->set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) impl->acceptor->bind(endpoint, ec);
  if (!ec) impl->acceptor->listen(asio::socket_base::max_listen_connections, ec);
  if (ec) return Status::io_error("cannot listen on " + where + ": " + ec.message());
  impl->port = impl->acceptor->local_endpoint(ec).port();
  if (ec) return Status::io_error(where + ": " + ec.message());

  impl->accept();
  Impl* raw = impl.get();
  impl->thread = std::thread([raw] {
    // A handler that throws past the connection (it should not) ends the serving, not the
    // process.
    try {
      raw->io->run();
    } catch (const std::exception& e) {
      DICE_LOG(Error) << raw->options.name << ": server thread stopped" << kv("error", e.what());
    }
  });
  return std::unique_ptr<HttpServer>(new HttpServer(std::move(impl)));
}

HttpServer::HttpServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

HttpServer::~HttpServer() {
  stop();
}

std::uint16_t HttpServer::port() const {
  return impl_->port;
}

const std::string& HttpServer::host() const {
  return impl_->options.host;
}

void HttpServer::stop() {
  if (impl_->stopped) return;
  impl_->stopped = true;
  impl_->io->stop();
  if (impl_->thread.joinable()) impl_->thread.join();
  // With the thread gone nothing runs handlers: close the listener, then destroy the context,
  // which destroys the pending handlers and with them every open connection.
  impl_->acceptor.reset();
  impl_->io.reset();
}

Result<std::string> url_decode(const std::string& text, bool query_part) {
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '+' && query_part) {
      out.push_back(' ');
    } else if (c == '%') {
      const int high = i + 2 < text.size() ? hex_digit(text[i + 1]) : -1;
      const int low = i + 2 < text.size() ? hex_digit(text[i + 2]) : -1;
      if (high < 0 || low < 0) {
        return Status::invalid_argument("bad percent escape at byte " + std::to_string(i) +
                                        " of \"" + text + "\"");
      }
      out.push_back(static_cast<char>(high * 16 + low));
      i += 2;
    } else {
      out.push_back(c);
    }
  }
  return out;
}

Result<std::map<std::string, std::string>> parse_query(const std::string& query) {
  std::map<std::string, std::string> out;
  std::size_t start = 0;
  while (start <= query.size()) {
    std::size_t end = query.find('&', start);
    if (end == std::string::npos) end = query.size();
    const std::string part = query.substr(start, end - start);
    start = end + 1;
    if (part.empty()) continue;
    const std::size_t eq = part.find('=');
    auto name = url_decode(part.substr(0, eq), true);
    if (!name.ok()) return name.status();
    auto value = url_decode(eq == std::string::npos ? "" : part.substr(eq + 1), true);
    if (!value.ok()) return value.status().with_context("parameter '" + name.value() + "'");
    out[name.value()] = value.value();
  }
  return out;
}

}  // namespace dice::service
