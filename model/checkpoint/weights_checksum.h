// A checksum of a checkpoint's weights: what a rollout worker reports with every candidate
// (Candidate.weightsChecksum), so a test or an operator can tell which weights sampled it by
// their bytes, not by a version number the worker echoes back.
//
// 64 bits over every tensor in name order: its name, dtype, shape and data bytes. Not a
// cryptographic hash (nothing is gained by forging one); fast enough to run on every load
// (~5 GB/s on one core).
#pragma once

#include <cstdint>
#include <string>

#include "model/checkpoint/checkpoint.h"

namespace dice {

std::uint64_t weights_checksum(const Checkpoint& checkpoint);

// As 16 lowercase hex digits (logs, dice-model checksum).
std::string checksum_hex(std::uint64_t checksum);

}  // namespace dice
