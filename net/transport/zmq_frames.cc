#include "net/transport/zmq_frames.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <utility>

namespace dice::transport {
namespace {

// ZeroMQ's reference to a payload it sends without copying. ZeroMQ orders the hand-off to its I/O
// thread with its own atomics, which a thread sanitizer cannot see in an uninstrumented libzmq;
// this release/acquire pair makes that order visible (one uncontended atomic per large send).
struct PayloadReference {
  explicit PayloadReference(SharedPayload p) : payload(std::move(p)) {
    published.store(true, std::memory_order_release);
  }
  SharedPayload payload;
  std::atomic<bool> published{false};
};

void release_payload(void* /*data*/, void* hint) {
  auto* reference = static_cast<PayloadReference*>(hint);
  [[maybe_unused]] const bool published = reference->published.load(std::memory_order_acquire);
  delete reference;
}

}  // namespace

std::vector<std::vector<zmq::message_t>> receive_round(zmq::socket_t& socket,
                                                       std::size_t max_messages) {
  std::vector<std::vector<zmq::message_t>> messages;
  std::vector<zmq::message_t> frames;
  while (messages.size() < max_messages && receive_frames(socket, &frames)) {
    // A typical round's worth without regrowing.
    if (messages.empty()) messages.reserve(std::min<std::size_t>(16, max_messages));
    messages.push_back(std::move(frames));
  }
  return messages;
}

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
    // Room for a ROUTER's [routing id, envelope] at once: one allocation per message, not two.
    if (frames->empty()) frames->reserve(2);
    frames->push_back(std::move(frame));
    if (!more) return true;
  }
}

namespace {

SendOutcome send_message(zmq::socket_t& socket, const std::string& routing_id,
                         zmq::message_t& payload) {
  try {
    if (!routing_id.empty()) {
      auto sent = socket.send(zmq::buffer(routing_id.data(), routing_id.size()),
                              zmq::send_flags::sndmore | zmq::send_flags::dontwait);
      if (!sent) return SendOutcome::kWouldBlock;
    }
    // Once the routing frame is accepted the rest of the message is too (atomic multipart).
    auto sent = socket.send(payload, zmq::send_flags::dontwait);
    return sent ? SendOutcome::kSent : SendOutcome::kWouldBlock;
  } catch (const zmq::error_t& e) {
    return e.num() == EHOSTUNREACH ? SendOutcome::kUnreachable : SendOutcome::kFailed;
  }
}

// A frame that refers to `payload` (kZeroCopyBytes or more) instead of copying it.
zmq::message_t referring_frame(const SharedPayload& payload) {
  // ZeroMQ calls release_payload (on its I/O thread) once the bytes are written or dropped.
  auto* reference = new PayloadReference(payload);
  return zmq::message_t(const_cast<char*>(payload->data()), payload->size(), release_payload,
                        reference);
}

}  // namespace

SendOutcome send_frames(zmq::socket_t& socket, const std::string& routing_id,
                        std::string_view payload) {
  zmq::message_t message(payload.data(), payload.size());
  return send_message(socket, routing_id, message);
}

SendOutcome send_frames(zmq::socket_t& socket, const std::string& routing_id,
                        const SharedPayload& payload) {
  if (payload->size() < kZeroCopyBytes) return send_frames(socket, routing_id, *payload);
  zmq::message_t message = referring_frame(payload);
  return send_message(socket, routing_id, message);
}

zmq::message_t encode_frame(capnp::MessageBuilder& message) {
  zmq::message_t frame(wire::encoded_size(message));
  wire::encode_to(message, static_cast<char*>(frame.data()));
  return frame;
}

zmq::message_t payload_frame(std::string payload) {
  if (payload.size() < kZeroCopyBytes) return zmq::message_t(payload.data(), payload.size());
  return referring_frame(std::make_shared<const std::string>(std::move(payload)));
}

SendOutcome send_frame(zmq::socket_t& socket, zmq::message_t& frame) {
  return send_message(socket, "", frame);
}

Result<wire::Decoded<schema::Envelope>> decode_frame(zmq::message_t frame) {
  if (frame.size() < kZeroCopyBytes) return wire::decode_envelope(frame.to_string_view());
  auto owner = std::make_shared<zmq::message_t>(std::move(frame));
  const std::string_view bytes = owner->to_string_view();
  return wire::decode_envelope(bytes, std::move(owner));
}

bool has_input(zmq::socket_t& socket) {
  try {
    return (socket.get(zmq::sockopt::events) & ZMQ_POLLIN) != 0;
  } catch (const zmq::error_t&) {
    return false;
  }
}

std::string frame_string(const zmq::message_t& frame) {
  return std::string(static_cast<const char*>(frame.data()), frame.size());
}

}  // namespace dice::transport
