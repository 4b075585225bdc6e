#include "net/transport/zap_handler.h"

#include <zmq.h>

#include <array>
#include <utility>
#include <vector>

#include "common/log.h"
#include "common/thread_name.h"
#include "net/transport/dispatcher_state.h"
#include "net/transport/zmq_frames.h"

namespace dice::transport {
namespace {

constexpr const char* kZapEndpoint = "inproc://zeromq.zap.01";
// How often the handler looks at its stop flag while no request comes.
constexpr int kStopCheckMs = 100;

}  // namespace

ZapHandler::ZapHandler(zmq::context_t& context, std::map<std::string, std::string> names_by_key)
    : names_by_key_(std::move(names_by_key)), socket_(context, zmq::socket_type::rep) {}

Result<std::unique_ptr<ZapHandler>> ZapHandler::start(
    zmq::context_t& context, std::map<std::string, std::string> names_by_key) {
  std::unique_ptr<ZapHandler> handler(new ZapHandler(context, std::move(names_by_key)));
  try {
    handler->socket_.set(zmq::sockopt::linger, 0);
    handler->socket_.bind(kZapEndpoint);
  } catch (const zmq::error_t& e) {
    return Status::io_error(std::string("transport: cannot start the CURVE authenticator: ") +
                            e.what());
  }
  handler->thread_ = std::thread([h = handler.get()] { h->run(); });
  return handler;
}

ZapHandler::~ZapHandler() {
  stopping_ = true;
  if (thread_.joinable()) thread_.join();
}

void ZapHandler::run() {
  set_current_thread_name("dice/zap");
  std::vector<zmq::message_t> request;
  while (!stopping_) {
    zmq::pollitem_t item{socket_.handle(), 0, ZMQ_POLLIN, 0};
    try {
      if (zmq::poll(&item, 1, std::chrono::milliseconds(kStopCheckMs)) == 0) continue;
      if (!receive_frames(socket_, &request)) continue;
      answer(request);
    } catch (const zmq::error_t& e) {
      if (e.num() == ETERM) break;
      DICE_LOG(Error) << "CURVE authenticator failed" << kv("error", e.what());
      break;
    }
  }
  socket_.close();
}

void ZapHandler::answer(std::vector<zmq::message_t>& request) {
  // Request: version, request id, domain, address, routing id, mechanism, credentials...
  std::string status = "400", text = "unknown public key", user;
  std::string address;
  if (request.size() < 6 || frame_string(request[0]) != "1.0") {
    status = "500";
    text = "malformed ZAP request";
  } else {
    address = frame_string(request[3]);
    if (frame_string(request[5]) != "CURVE" || request.size() != 7 || request[6].size() != 32) {
      text = "only CURVE is accepted";
    } else {
      std::array<char, 41> z85{};
      zmq_z85_encode(z85.data(), static_cast<const std::uint8_t*>(request[6].data()), 32);
      auto found = names_by_key_.find(z85.data());
      if (found != names_by_key_.end()) {
        status = "200";
        text = "OK";
        user = found->second;
      }
    }
  }
  if (status != "200") {
    const std::uint64_t count = ++refused_;
    if (should_log_occurrence(count)) {
      DICE_LOG(Warn) << "connection refused" << kv("address", address) << kv("why", text)
                     << kv("count", count);
    }
  }
  const std::string request_id = request.size() > 1 ? frame_string(request[1]) : std::string();
  const std::array<std::string, 6> reply = {"1.0", request_id, status, text, user, ""};
  for (std::size_t i = 0; i < reply.size(); ++i) {
    socket_.send(zmq::buffer(reply[i]),
                 i + 1 < reply.size() ? zmq::send_flags::sndmore : zmq::send_flags::none);
  }
}

}  // namespace dice::transport
