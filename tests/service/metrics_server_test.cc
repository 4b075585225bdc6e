// MetricsServer over a real loopback socket, scraped by a plain POSIX socket client.
#include "net/service/metrics_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>

namespace dice::service {
namespace {

using Clock = std::chrono::steady_clock;

// A connected client socket, closed on scope exit.
class TestClient {
 public:
  explicit TestClient(std::uint16_t port) {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(port);
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    connected_ = ::connect(fd_, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0;
  }
  ~TestClient() {
    if (fd_ >= 0) ::close(fd_);
  }
  bool connected() const { return connected_; }

  bool send_all(const std::string& bytes) {
    std::size_t sent = 0;
    while (sent < bytes.size()) {
      ssize_t n = ::send(fd_, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
      if (n <= 0) return false;
      sent += static_cast<std::size_t>(n);
    }
    return true;
  }

  // Reads until the peer closes (`until_close`) or one full response arrived; gives up at the
  // deadline.
  std::string read_response(bool until_close,
                            std::chrono::milliseconds budget = std::chrono::milliseconds(5000)) {
    std::string data;
    auto deadline = Clock::now() + budget;
    while (Clock::now() < deadline) {
      if (!until_close && complete(data)) break;
      pollfd p{fd_, POLLIN, 0};
      int left = static_cast<int>(
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count());
      if (::poll(&p, 1, std::max(left, 1)) <= 0) continue;
      char buf[4096];
      ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
      if (n <= 0) {
        closed_ = true;
        break;
      }
      data.append(buf, static_cast<std::size_t>(n));
    }
    return data;
  }
  bool closed() const { return closed_; }

 private:
  static bool complete(const std::string& data) {
    auto end = data.find("\r\n\r\n");
    if (end == std::string::npos) return false;
    auto at = data.find("Content-Length: ");
    if (at == std::string::npos || at > end) return false;
    std::size_t length = std::stoul(data.substr(at + 16));
    return data.size() >= end + 4 + length;
  }

  int fd_ = -1;
  bool connected_ = false;
  bool closed_ = false;
};

std::string body_of(const std::string& response) {
  auto end = response.find("\r\n\r\n");
  return end == std::string::npos ? "" : response.substr(end + 4);
}

class MetricsServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Counter* failures =
        registry_.counter("dice_failures_total", "Failures.", {{"class", "compileError"}}).value();
    failures->add(3);
    MetricsServerOptions options;
    options.before_scrape = [this] { scrapes_++; };
    auto server = MetricsServer::start(options, &registry_);
    ASSERT_TRUE(server.ok()) << server.status().to_string();
    server_ = std::move(server).value();
    ASSERT_NE(server_->port(), 0);
  }

  std::string get(const std::string& request) {
    TestClient client(server_->port());
    EXPECT_TRUE(client.connected());
    EXPECT_TRUE(client.send_all(request));
    return client.read_response(/*until_close=*/false);
  }

  MetricsRegistry registry_;
  std::atomic<int> scrapes_{0};
  std::unique_ptr<MetricsServer> server_;
};

TEST_F(MetricsServerTest, ServesMetricsOnEphemeralPort) {
  std::string response = get("GET /metrics HTTP/1.1\r\nHost: localhost\r\n\r\n");
  EXPECT_EQ(response.rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << response;
  EXPECT_NE(response.find("Content-Type: text/plain; version=0.0.4"), std::string::npos);
  EXPECT_EQ(body_of(response), registry_.render());
  EXPECT_NE(body_of(response).find("dice_failures_total{class=\"compileError\"} 3\n"),
            std::string::npos);
  EXPECT_EQ(scrapes_.load(), 1);
}

TEST_F(MetricsServerTest, KeepAliveServesSeveralRequestsAndSeesUpdates) {
  TestClient client(server_->port());
  ASSERT_TRUE(client.connected());
  ASSERT_TRUE(client.send_all("GET /metrics?x=1 HTTP/1.1\r\nHost: a\r\n\r\n"));
  std::string first = client.read_response(false);
  EXPECT_NE(first.find(" 3\n"), std::string::npos) << first;
  registry_.counter("dice_failures_total", "Failures.", {{"class", "compileError"}})
      .value()
      ->add(2);
  ASSERT_TRUE(client.send_all("GET /metrics HTTP/1.1\r\nHost: a\r\n\r\n"));
  std::string second = client.read_response(false);
  EXPECT_NE(second.find("{class=\"compileError\"} 5\n"), std::string::npos) << second;
}

TEST_F(MetricsServerTest, OtherPathIs404AndOtherMethodIs405) {
  EXPECT_EQ(get("GET / HTTP/1.1\r\nHost: a\r\n\r\n").rfind("HTTP/1.1 404", 0), 0u);
  EXPECT_EQ(get("GET /metricsx HTTP/1.1\r\nHost: a\r\n\r\n").rfind("HTTP/1.1 404", 0), 0u);
  EXPECT_EQ(get("POST /metrics HTTP/1.1\r\nHost: a\r\nContent-Length: 0\r\n\r\n")
                .rfind("HTTP/1.1 405", 0),
            0u);
  EXPECT_EQ(scrapes_.load(), 0);
}

TEST_F(MetricsServerTest, MalformedRequestGets400AndServerStaysUp) {
  for (const char* garbage : {"GARBAGE\r\n\r\n", "GET /metrics HTTP/1.1\r\nBad Header\r\n\r\n",
                              "\x01\x02\x03\x04 nonsense\r\n\r\n"}) {
    TestClient client(server_->port());
    ASSERT_TRUE(client.connected());
    ASSERT_TRUE(client.send_all(garbage));
    std::string response = client.read_response(/*until_close=*/true);
    EXPECT_EQ(response.rfind("HTTP/1.1 400", 0), 0u) << "request: " << garbage << "\n" << response;
    EXPECT_TRUE(client.closed());
  }
  {
    // A client that sends half a request and leaves.
    TestClient client(server_->port());
    ASSERT_TRUE(client.send_all("GET /met"));
  }
  std::string response = get("GET /metrics HTTP/1.1\r\nHost: a\r\n\r\n");
  EXPECT_EQ(response.rfind("HTTP/1.1 200", 0), 0u) << response;
}

TEST_F(MetricsServerTest, StopClosesListenerAndIsIdempotent) {
  std::uint16_t port = server_->port();
  TestClient idle(port);  // an open connection must not keep stop() waiting
  ASSERT_TRUE(idle.connected());
  auto start = Clock::now();
  server_->stop();
  server_->stop();
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(2));
  TestClient late(port);
  EXPECT_FALSE(late.connected());
  idle.read_response(true, std::chrono::milliseconds(2000));
  EXPECT_TRUE(idle.closed());
}

TEST(MetricsServerStartTest, BadHostAndPortInUseAreErrors) {
  MetricsRegistry registry;
  MetricsServerOptions options;
  options.host = "not-an-ip";
  auto bad_host = MetricsServer::start(options, &registry);
  ASSERT_FALSE(bad_host.ok());
  EXPECT_EQ(bad_host.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad_host.status().message().find("not-an-ip"), std::string::npos);

  auto first = MetricsServer::start(MetricsServerOptions{}, &registry);
  ASSERT_TRUE(first.ok());
  MetricsServerOptions same;
  same.port = (*first)->port();
  auto second = MetricsServer::start(same, &registry);
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), StatusCode::kIOError);
  EXPECT_NE(second.status().message().find("127.0.0.1:" + std::to_string(same.port)),
            std::string::npos);
}

}  // namespace
}  // namespace dice::service
