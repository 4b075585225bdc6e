#include "net/wire/envelope.h"

#include <chrono>

namespace dice::wire {

schema::Envelope::Builder init_envelope(capnp::MessageBuilder& message, std::string_view sender_id,
                                        std::string_view run_id) {
  auto envelope = message.initRoot<schema::Envelope>();
  envelope.setProtocolVersion(schema::PROTOCOL_VERSION);
  envelope.setSenderId(capnp::Text::Reader(sender_id.data(), sender_id.size()));
  envelope.setRunId(capnp::Text::Reader(run_id.data(), run_id.size()));
  envelope.setSentUnixMillis(unix_millis_now());
  return envelope;
}

Result<Decoded<schema::Envelope>> decode_envelope(std::string_view bytes,
                                                  const DecodeOptions& options) {
  return decode_envelope(bytes, nullptr, options);
}

Result<Decoded<schema::Envelope>> decode_envelope(std::string_view bytes,
                                                  std::shared_ptr<const void> owner,
                                                  const DecodeOptions& options) {
  Result<Decoded<schema::Envelope>> decoded =
      decode<schema::Envelope>(bytes, std::move(owner), options);
  if (!decoded.ok()) return decoded.status().with_context("envelope");
  const std::uint16_t version = decoded->root().getProtocolVersion();
  if (version != schema::PROTOCOL_VERSION) {
    return Status::invalid_argument(
        "envelope from '" + std::string(decoded->root().getSenderId().cStr()) +
        "': protocol version " + std::to_string(version) + ", this build speaks " +
        std::to_string(schema::PROTOCOL_VERSION));
  }
  return decoded;
}

const char* body_name(schema::Envelope::Body::Which which) {
  using B = schema::Envelope::Body;
  switch (which) {
    case B::HELLO:
      return "hello";
    case B::HEARTBEAT:
      return "heartbeat";
    case B::CREDIT:
      return "credit";
    case B::ACK:
      return "ack";
    case B::ROLLOUT_REQUEST:
      return "rolloutRequest";
    case B::CANDIDATE:
      return "candidate";
    case B::EVAL_REQUEST:
      return "evalRequest";
    case B::VERDICT:
      return "verdict";
    case B::WEIGHTS_UPDATE:
      return "weightsUpdate";
    case B::SHUTDOWN:
      return "shutdown";
    case B::ERROR:
      return "error";
    case B::CANCEL:
      return "cancel";
  }
  return "unknown";
}

std::int64_t unix_millis_now() {
  using std::chrono::duration_cast;
  using std::chrono::milliseconds;
  using std::chrono::system_clock;
  return duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count();
}

}  // namespace dice::wire
