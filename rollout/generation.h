// What goes into and comes out of the block-diffusion sampler: plain sequence data, no tensors.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "options/rollout_options.h"

namespace dice {

// Options of one BlockDiffusionSampler (one model, one set of slots).
struct SamplerOptions {
  // How to sample (temperature, top-k/p, block, steps, remasking, threshold, default
  // max_new_tokens and stop tokens). block_size must equal the model's. Default: DICE's RL
  // settings (rollout_options.h)
  SamplingOptions sampling;
  // Id of <|MASK|>; a masked position holds it. Default: 151669 (SDAR)
  int64_t mask_token_id = 151669;
  // Slots: sequences decoded at once (rows of the KV cache). Default: 128
  int max_batch = 128;
  // KV cache room per slot in tokens: a request needs prompt + max_new_tokens + block_size.
  // GPU memory grows with max_batch x this. Default: 8192
  int64_t max_sequence_length = 8192;
  // Most prompt tokens (padded) prefilled in one forward when several requests join at once;
  // larger groups are split. Default: 16384
  int64_t max_prefill_tokens = 16384;
  // When some slots are idle, or only some commit a finished block (2 blocks of tokens where the
  // others have 1), run the forward's dense layers on the real tokens only (a packed chunk,
  // Qwen3LM::chunk_layout) instead of padding every slot to the longest. Same tokens either way
  // (up to float rounding). Default: true
  bool pack_chunks = true;
  // On a CUDA device (and a LibTorch with CUDA), replay the denoising forwards from CUDA graphs
  // (chunk_forward_graphs.h): the layout is then always padded and its key slots rounded up to
  // graph_key_slots, one graph per (chunk length, key slots). Default: true
  bool cuda_graphs = true;
  // Key-slot rounding of graphed forwards: more graphs (capture time, memory) when smaller, more
  // attention work when larger. Default: 128
  int64_t graph_key_slots = 128;
  // Seed of the sampler's random generator: the same seed, requests, order and options give the
  // same samples. Default: 0
  uint64_t seed = 0;
};

// The options a rollout worker's config gives a sampler (see also sampler_options_for in
// rollout_worker.h, which takes the model's mask token and stop tokens).
inline SamplerOptions sampler_options_from(const RolloutOptions& rollout) {
  SamplerOptions o;
  o.sampling = rollout.sampling;
  o.mask_token_id = static_cast<int64_t>(rollout.mask_token_id);
  o.max_batch = rollout.max_batch;
  o.max_sequence_length = rollout.max_sequence_length;
  o.cuda_graphs = rollout.cuda_graphs;
  return o;
}

// Whether two samplings draw alike (the engine batches groups of equal sampling together).
inline bool same_sampling(const SamplingOptions& a, const SamplingOptions& b) {
  return a.temperature == b.temperature && a.top_p == b.top_p && a.top_k == b.top_k &&
         a.max_new_tokens == b.max_new_tokens && a.block_size == b.block_size &&
         a.denoising_steps == b.denoising_steps && a.remasking == b.remasking &&
         a.threshold == b.threshold && a.stop_token_ids == b.stop_token_ids;
}

struct GenerationRequest {
  uint64_t id = 0;              // the caller's id, returned with the result
  std::vector<int64_t> prompt;  // prompt token ids; at least one
  // Overrides SamplingOptions.max_new_tokens when > 0. Default: 0
  int max_new_tokens = 0;
  // Overrides SamplingOptions.stop_token_ids when set (an empty list: no stop token).
  std::optional<std::vector<uint32_t>> stop_token_ids;
};

using FinishReason = schema::Candidate::FinishReason;

struct GenerationResult {
  uint64_t id = 0;
  // Generated tokens only, the stop token included when one ended the sequence; at most
  // max_new_tokens.
  std::vector<int64_t> tokens;
  // Per token: the denoising step of its block (0-based, < denoising_steps) whose forward
  // unmasked it: the trace TraceRL trains on (schemas/rollout.capnp Candidate.unmaskStep).
  std::vector<int32_t> unmask_steps;
  // Per token: log p(token) under the distribution it was drawn from (token_draw.h).
  std::vector<float> log_probs;
  FinishReason finish_reason = FinishReason::MAX_TOKENS;
  // The rest of the final block after the end: tokens the sampler committed there (with their
  // steps) that are not part of the response. The last block's tokens were drawn with them in
  // context, so TraceRL needs them to rebuild that context (learner/step/trace_layout.h).
  std::vector<int64_t> tail_tokens;
  std::vector<int32_t> tail_unmask_steps;
};

// Counters since the sampler was created (for benchmarks and metrics).
struct SamplerStats {
  int64_t steps = 0;                 // step() calls that ran a denoising forward
  int64_t row_forwards = 0;          // sum over denoising forwards of the sequences in them
  int64_t committed_tokens = 0;      // positions unmasked (before stop/max truncation)
  int64_t generated_tokens = 0;      // tokens returned in results
  int64_t processed_tokens = 0;      // chunk tokens of denoising forwards, padding included
  int64_t prefill_tokens = 0;        // prompt tokens prefilled (padding included)
  int64_t finished = 0;              // sequences finished
  int64_t graphed_steps = 0;         // denoising forwards replayed from a CUDA graph
  int64_t graphs = 0;                // CUDA graphs captured (one per forward shape)
  double graph_capture_seconds = 0;  // host time spent capturing them (warm-up forward included)
};

}  // namespace dice
