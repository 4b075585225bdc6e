// Envelope helpers: every ZeroMQ message between dice services is one schema::Envelope
// (schemas/control.capnp). These stamp the header fields on the way out and check the protocol
// version on the way in.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "common/status.h"
#include "net/wire/wire.h"
#include "schemas/control.capnp.h"

namespace dice::wire {

// Makes `message`'s root an Envelope with protocolVersion, senderId, runId and sentUnixMillis
// (now) filled in; the caller then sets one body arm.
schema::Envelope::Builder init_envelope(capnp::MessageBuilder& message, std::string_view sender_id,
                                        std::string_view run_id);

// decode<schema::Envelope>() plus the version rule: an envelope of another protocolVersion is
// InvalidArgument ("protocol version 2, this build speaks 1"); malformed bytes are Corruption.
Result<Decoded<schema::Envelope>> decode_envelope(std::string_view bytes,
                                                  const DecodeOptions& options = DecodeOptions());

// decode_envelope() reading `bytes` in place when aligned, keeping `owner` alive with the result
// (see wire::decode_message's owner overload); for frames received from a socket.
Result<Decoded<schema::Envelope>> decode_envelope(std::string_view bytes,
                                                  std::shared_ptr<const void> owner,
                                                  const DecodeOptions& options = DecodeOptions());

// "hello", "heartbeat", ... for logs and counters; "unknown" for an arm this build does not know.
const char* body_name(schema::Envelope::Body::Which which);

// Milliseconds since the Unix epoch, for the sentUnixMillis / unixMillis fields.
std::int64_t unix_millis_now();

}  // namespace dice::wire
