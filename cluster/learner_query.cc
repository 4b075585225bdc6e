#include "cluster/learner_query.h"

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include <chrono>
#include <cstdlib>
#include <sstream>

namespace dice::cluster {
namespace {

namespace beast = boost::beast;
namespace http = beast::http;
using Tcp = boost::asio::ip::tcp;

constexpr char kSilent[] = "dice_learner_transport_worker_silent_seconds{";
constexpr char kCompleted[] = "dice_learner_transport_worker_completed_total{";

// "<node>/<role>/<index>" -> "<role>-<index>", or "" when the id has another form.
std::string service_name(const std::string& worker_id) {
  const auto last = worker_id.rfind('/');
  if (last == std::string::npos || last == 0) return "";
  const auto role_start = worker_id.rfind('/', last - 1);
  if (role_start == std::string::npos) return "";
  const std::string role = worker_id.substr(role_start + 1, last - role_start - 1);
  const std::string index = worker_id.substr(last + 1);
  if (role.empty() || index.empty() || index.find_first_not_of("0123456789") != std::string::npos)
    return "";
  return role + "-" + index;
}

// The worker label and the value of one series line; false when the line has neither.
bool worker_series(const std::string& line, std::size_t name_length, std::string* worker,
                   double* value) {
  const std::string key = "worker=\"";
  const auto at = line.find(key, name_length);
  if (at == std::string::npos) return false;
  const auto end = line.find('"', at + key.size());
  const auto close = line.find('}', end == std::string::npos ? at : end);
  if (end == std::string::npos || close == std::string::npos) return false;
  *worker = line.substr(at + key.size(), end - at - key.size());
  const char* text = line.c_str() + close + 1;
  char* parsed = nullptr;
  *value = std::strtod(text, &parsed);
  return parsed != text;
}

}  // namespace

std::map<std::string, WorkerHealth> parse_worker_health(const std::string& metrics_text) {
  std::map<std::string, WorkerHealth> out;
  std::istringstream in(metrics_text);
  for (std::string line; std::getline(in, line);) {
    const bool silent = line.rfind(kSilent, 0) == 0;
    const bool completed = line.rfind(kCompleted, 0) == 0;
    if (!silent && !completed) continue;
    std::string worker;
    double value = 0;
    if (!worker_series(line, silent ? sizeof(kSilent) - 1 : sizeof(kCompleted) - 1, &worker,
                       &value)) {
      continue;
    }
    const std::string name = service_name(worker);
    if (name.empty()) continue;
    (silent ? out[name].silent_seconds : out[name].completed) = value;
  }
  return out;
}

Result<std::map<std::string, WorkerHealth>> query_worker_health(const std::string& host, int port,
                                                                int timeout_ms) {
  const std::string where = host + ":" + std::to_string(port);
  try {
    boost::asio::io_context io;
    Tcp::resolver resolver(io);
    beast::tcp_stream stream(io);
    stream.expires_after(std::chrono::milliseconds(timeout_ms));
    stream.connect(resolver.resolve(host, std::to_string(port)));
    http::request<http::empty_body> request(http::verb::get, "/metrics", 11);
    request.set(http::field::host, host);
    http::write(stream, request);
    beast::flat_buffer buffer;
    http::response<http::string_body> response;
    http::read(stream, buffer, response);
    beast::error_code ignored;
    stream.socket().shutdown(Tcp::socket::shutdown_both, ignored);
    if (response.result() != http::status::ok) {
      return Status::unavailable("learner /metrics at " + where + " answered " +
                                 std::to_string(response.result_int()));
    }
    return parse_worker_health(response.body());
  } catch (const std::exception& e) {
    return Status::unavailable("learner /metrics at " + where + ": " + e.what());
  }
}

}  // namespace dice::cluster
