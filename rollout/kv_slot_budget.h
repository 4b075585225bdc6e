// How many sequences a rollout worker decodes at once: as many KV-cache rows of
// max_sequence_length tokens as fit in its share of the GPU, up to rollout.max_batch. Worked out
// at start from the driver's free and total memory once the weights are loaded (model/
// device_memory.h), so a worker never starts with a cache its GPU cannot hold and nobody works
// out max_batch by hand for a GPU, a model and a learner beside it.
//
//   share    = gpu_memory_fraction x total - weights        what this worker may still take
//   room     = min(share, free - headroom) - prefill working memory
//   per slot = KV bytes per token x max_sequence_length + decode working memory per sequence
//   slots    = min(max_batch, floor(room / per slot))
//
// The working memory is an upper estimate of what the sampler's forwards hold at once, from the
// shape (activations of the largest prefill chunk; a block's logits in fp32 and its activations
// per decoding sequence), not a measurement; the headroom covers the CUDA context, CUDA graph
// pools and the allocator's rounding.
#pragma once

#include <cstdint>
#include <string>

#include "common/status.h"
#include "model/checkpoint/model_config.h"

namespace dice {

struct SlotBudgetInput {
  ModelConfig model;
  std::int64_t dtype_bytes = 2;  // of the weights and the KV cache (bf16)
  std::int64_t max_sequence_length = 0;
  std::int64_t max_prefill_tokens = 0;
  int max_batch = 0;               // the ceiling
  double gpu_memory_fraction = 0;  // of the device's total memory this worker may hold in all
  std::uint64_t free_bytes = 0;    // the device's, now (the weights already loaded)
  std::uint64_t total_bytes = 0;
  std::uint64_t weights_bytes = 0;  // this worker's weights
};

struct SlotBudget {
  int slots = 0;
  std::uint64_t bytes_per_slot = 0;  // KV cache plus decode working memory
  std::uint64_t room_bytes = 0;      // for the slots, after weights, headroom and prefill

  // "96 slots of 6144 tokens (672 MiB each) in 63.2 GiB: ..." for the start-up log line.
  std::string describe(const SlotBudgetInput& in) const;
};

// Every layer's keys and values of one token.
std::uint64_t kv_bytes_per_token(const ModelConfig& model, std::int64_t dtype_bytes);

// The budget; InvalidArgument naming the fields when not even one sequence fits (or an input is
// out of range).
Result<SlotBudget> kv_slot_budget(const SlotBudgetInput& in);

// Headroom kept free on the device beyond every estimate. Default: 2 GiB
inline constexpr std::uint64_t kSlotBudgetHeadroomBytes = 2ull << 30;

}  // namespace dice
