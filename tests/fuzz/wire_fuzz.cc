// libFuzzer target: envelope decoding, per message type. The first byte picks the root type: an
// Envelope (decode_envelope, then its body arm read as the receiving service reads it) or one of
// the body types on its own (wire::decode<T>); the rest is the encoded message.
//
// Checked beyond "no crash": wire.h promises that once a decode succeeds no field read can throw,
// so every field is read (toString walks them all) and a throw escapes as a crash; and the
// in-place decode of aligned bytes (how frames off a socket are read) must accept exactly what
// the copying decode accepts.
//
// The traversal budget is 64 Ki words here, not the default 8 Mi: a few hundred bytes of shared
// pointers can make a valid message whose walk reads the whole budget (bounded, as designed:
// under a second under ASan), but whose toString then takes minutes. The limit is checked by
// the same code whatever its value.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string_view>
#include <vector>

#include "net/wire/envelope.h"
#include "net/wire/sampling_params.h"
#include "net/wire/wire.h"
#include "schemas/control.capnp.h"
#include "schemas/rollout.capnp.h"
#include "schemas/task.capnp.h"
#include "schemas/verdict.capnp.h"
#include "tests/fuzz/wire_fuzz_types.h"

namespace dice::fuzz {
namespace {

wire::DecodeOptions fuzz_options() {
  wire::DecodeOptions options;
  options.traversal_limit_words = std::uint64_t{1} << 16;
  return options;
}

// `bytes` copied to 8-byte-aligned words owned by the returned pointer, for the in-place decode.
std::shared_ptr<std::vector<capnp::word>> aligned_copy(std::string_view bytes) {
  auto words = std::make_shared<std::vector<capnp::word>>(bytes.size() / sizeof(capnp::word) + 1);
  if (!bytes.empty()) std::memcpy(words->data(), bytes.data(), bytes.size());
  return words;
}

void check_agree(bool copied_ok, bool in_place_ok) {
  if (copied_ok != in_place_ok) std::abort();  // the two decodes disagree on the same bytes
}

template <typename T>
void decode_as(std::string_view bytes) {
  auto words = aligned_copy(bytes);
  std::string_view aligned(reinterpret_cast<const char*>(words->data()), bytes.size());
  Result<wire::Decoded<T>> copied = wire::decode<T>(bytes, fuzz_options());
  Result<wire::Decoded<T>> in_place = wire::decode<T>(aligned, words, fuzz_options());
  check_agree(copied.ok(), in_place.ok());
  if (!copied.ok()) return;
  copied->root().toString().flatten();
  in_place->root().toString().flatten();
}

// What a receiving service reads of each arm beyond the fields themselves.
void read_body(schema::Envelope::Reader envelope) {
  wire::body_name(envelope.getBody().which());
  if (envelope.getBody().isRolloutRequest()) {
    (void)wire::read_sampling_params(envelope.getBody().getRolloutRequest().getSampling());
  }
}

void decode_envelope(std::string_view bytes) {
  auto words = aligned_copy(bytes);
  std::string_view aligned(reinterpret_cast<const char*>(words->data()), bytes.size());
  Result<wire::Decoded<schema::Envelope>> copied = wire::decode_envelope(bytes, fuzz_options());
  Result<wire::Decoded<schema::Envelope>> in_place =
      wire::decode_envelope(aligned, words, fuzz_options());
  check_agree(copied.ok(), in_place.ok());
  if (!copied.ok()) return;
  copied->root().toString().flatten();
  read_body(copied->root());
  read_body(in_place->root());
}

void decode_wire_type(WireType type, std::string_view bytes) {
  switch (type) {
    case WireType::kEnvelope:
      return decode_envelope(bytes);
    case WireType::kHello:
      return decode_as<schema::Hello>(bytes);
    case WireType::kHeartbeat:
      return decode_as<schema::Heartbeat>(bytes);
    case WireType::kCredit:
      return decode_as<schema::Credit>(bytes);
    case WireType::kAck:
      return decode_as<schema::Ack>(bytes);
    case WireType::kRolloutRequest:
      return decode_as<schema::RolloutRequest>(bytes);
    case WireType::kCandidate:
      return decode_as<schema::Candidate>(bytes);
    case WireType::kEvalRequest:
      return decode_as<schema::EvalRequest>(bytes);
    case WireType::kVerdict:
      return decode_as<schema::Verdict>(bytes);
    case WireType::kWeightsUpdate:
      return decode_as<schema::WeightsUpdate>(bytes);
    case WireType::kShutdown:
      return decode_as<schema::Shutdown>(bytes);
    case WireType::kError:
      return decode_as<schema::Error>(bytes);
    case WireType::kTask:
      return decode_as<schema::Task>(bytes);
  }
}

}  // namespace
}  // namespace dice::fuzz

// NOLINTNEXTLINE(readability-identifier-naming): the name libFuzzer calls
extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const auto type = static_cast<dice::fuzz::WireType>(data[0] % dice::fuzz::kWireTypeCount);
  dice::fuzz::decode_wire_type(type,
                               std::string_view(reinterpret_cast<const char*>(data) + 1, size - 1));
  return 0;
}
