// The first byte of a wire_fuzz input: the message type the rest decodes as (modulo
// kWireTypeCount). Shared by the target and the seed generator, which prefixes each seed with it.
#pragma once

#include <cstdint>

namespace dice::fuzz {

enum class WireType : std::uint8_t {
  kEnvelope,
  kHello,
  kHeartbeat,
  kCredit,
  kAck,
  kRolloutRequest,
  kCandidate,
  kEvalRequest,
  kVerdict,
  kWeightsUpdate,
  kShutdown,
  kError,
  kTask,
};
inline constexpr int kWireTypeCount = static_cast<int>(WireType::kTask) + 1;

}  // namespace dice::fuzz
