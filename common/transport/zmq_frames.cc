#include "common/transport/zmq_frames.h"

#include <cerrno>

namespace dice::transport {

bool receive_frames(zmq::socket_t& socket, std::vector<zmq::message_t>* frames) {
  frames->clear();
  while (true) {
    zmq::message_t frame;
    zmq::recv_result_t got;
    try {
      got = socket.recv(frame, frames->empty() ? zmq::recv_flags::dontwait : zmq::recv_flags::none);
    } catch (const zmq::error_t&) {
      return false;  // EINTR or a closing context: the caller's loop decides what next
    }
    if (!got) return !frames->empty();
    const bool more = frame.more();
    frames->push_back(std::move(frame));
    if (!more) return true;
  }
}

SendOutcome send_frames(zmq::socket_t& socket, const std::string& routing_id,
                        std::string_view payload) {
  try {
    if (!routing_id.empty()) {
      auto sent = socket.send(zmq::buffer(routing_id.data(), routing_id.size()),
                              zmq::send_flags::sndmore | zmq::send_flags::dontwait);
      if (!sent) return SendOutcome::kWouldBlock;
    }
    // Once the routing frame is accepted the rest of the message is too (atomic multipart).
    auto sent = socket.send(zmq::buffer(payload.data(), payload.size()), zmq::send_flags::dontwait);
    return sent ? SendOutcome::kSent : SendOutcome::kWouldBlock;
  } catch (const zmq::error_t& e) {
    return e.num() == EHOSTUNREACH ? SendOutcome::kUnreachable : SendOutcome::kFailed;
  }
}

std::string frame_string(const zmq::message_t& frame) {
  return std::string(static_cast<const char*>(frame.data()), frame.size());
}

}  // namespace dice::transport
