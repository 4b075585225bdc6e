// net/service/http_server.h over a real loopback socket: what the handler is given, what the
// client gets back, the errors the server answers itself, and the URL decoding. The /metrics
// handler on top of it: metrics_server_test.cc; dice-dash's: tests/tools/dice_dash_api_test.cc.
#include "net/service/http_server.h"

#include <gtest/gtest.h>

#include <stdexcept>

#include "tests/support/http_get.h"

namespace dice::service {
namespace {

using testing_util::http_get;

// A handler that echoes what it was given, and throws for /throw.
HttpResponse echo(const HttpRequest& request) {
  if (request.path == "/throw") throw std::runtime_error("boom");
  HttpResponse response;
  response.status = request.path == "/missing" ? 404 : 200;
  response.content_type = "application/x-echo";
  response.body = request.method + " " + request.path;
  for (const auto& [name, value] : request.query) response.body += " " + name + "=" + value;
  response.body += " auth=" + request.authorization + " cookie=" + request.cookie;
  response.headers.push_back({"X-Extra", "yes"});
  return response;
}

class HttpServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    HttpServerOptions options;
    options.name = "echo-test";
    auto server = HttpServer::start(options, echo);
    ASSERT_TRUE(server.ok()) << server.status().to_string();
    server_ = std::move(server).value();
  }
  std::unique_ptr<HttpServer> server_;
};

TEST_F(HttpServerTest, TheHandlerGetsTheDecodedRequestAndItsAnswerIsSent) {
  const auto got = http_get(server_->port(), "/a%20b?x=1&name=two+words&esc=%26",
                            {"Authorization: Bearer t", "Cookie: k=v"});
  EXPECT_EQ(got.status, 200);
  EXPECT_EQ(got.body, "GET /a b esc=& name=two words x=1 auth=Bearer t cookie=k=v");
  EXPECT_NE(got.headers.find("Content-Type: application/x-echo"), std::string::npos);
  EXPECT_NE(got.headers.find("Server: echo-test"), std::string::npos);
  EXPECT_NE(got.headers.find("X-Extra: yes"), std::string::npos);
  EXPECT_EQ(http_get(server_->port(), "/missing").status, 404);
  EXPECT_EQ(http_get(server_->port(), "/p", {"Content-Length: 0"}, "POST").body.rfind("POST /p", 0),
            0u);
}

TEST_F(HttpServerTest, BadEscapesAndThrowingHandlersAreAnsweredByTheServer) {
  const auto path = http_get(server_->port(), "/a%zz");
  EXPECT_EQ(path.status, 400);
  EXPECT_NE(path.body.find("bad request: path: bad percent escape at byte 2"), std::string::npos);
  const auto query = http_get(server_->port(), "/a?k=%4");
  EXPECT_EQ(query.status, 400);
  EXPECT_NE(query.body.find("parameter 'k'"), std::string::npos);
  const auto thrown = http_get(server_->port(), "/throw");
  EXPECT_EQ(thrown.status, 500);
  EXPECT_EQ(thrown.body, "internal error: boom\n");
  EXPECT_EQ(http_get(server_->port(), "/after").status, 200);  // still serving
}

TEST_F(HttpServerTest, StopEndsTheServingAndIsIdempotent) {
  const int port = server_->port();
  server_->stop();
  server_->stop();
  EXPECT_EQ(http_get(port, "/").status, 0);  // nothing answers
}

TEST(HttpServerStartTest, BadOptionsAreNamed) {
  HttpServerOptions options;
  options.host = "not-an-ip";
  auto host = HttpServer::start(options, echo);
  EXPECT_EQ(host.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(host.status().message(), "bind address 'not-an-ip' is not an IP address");
  options = HttpServerOptions{};
  options.idle_timeout_ms = 0;
  EXPECT_EQ(HttpServer::start(options, echo).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(HttpServer::start(HttpServerOptions{}, nullptr).status().code(),
            StatusCode::kInvalidArgument);
}

TEST(UrlDecodeTest, EscapesPlusAndErrors) {
  EXPECT_EQ(url_decode("a%2Fb+c", false).value(), "a/b+c");
  EXPECT_EQ(url_decode("a%2fb+c", true).value(), "a/b c");
  EXPECT_FALSE(url_decode("%", false).ok());
  EXPECT_FALSE(url_decode("%g0", false).ok());
  const auto query = parse_query("a=1&&b&c=x%20y&a=2");
  ASSERT_TRUE(query.ok());
  EXPECT_EQ(query.value(),
            (std::map<std::string, std::string>{{"a", "2"}, {"b", ""}, {"c", "x y"}}));
  EXPECT_EQ(parse_query("k=%zz").status().message(),
            "parameter 'k': bad percent escape at byte 0 of \"%zz\"");
}

}  // namespace
}  // namespace dice::service
