// BlockDiffusionSampler: SDAR block-diffusion generation for a batch of slots, with TraceRL
// traces and continuous batching.
//
// One sequence, as SDAR decodes it (docs/REFERENCE.md section 2):
//
//   prompt P tokens:  [ whole block | whole block | tail (P mod B) ]
//                       \_____ prefilled into the KV cache ____/   \_ first decode block:
//                                                                     tail fixed, rest masked
//   then blocks of B = block_size tokens, each starting fully masked:
//     step k = 0 .. denoising_steps-1, while masks are left:
//       forward the block against the cache without storing it, draw a token at every
//       position (token_draw.h), commit some masked positions (remasking.h)
//     once no mask is left, the block's keys/values are stored in the cache.
//   A sequence ends after the block holding a stop token (output cut after that token) or when
//   it has max_new_tokens tokens (output cut there).
// The prompt is not padded with extra tokens: its last partial block simply becomes the first
// decode block, so every cache length stays a multiple of B, as Qwen3LM::forward_cached needs.
//
// The batch: `max_batch` slots, one KV cache row each. step() runs ONE forward over every
// running slot:
//   - a slot in the middle of a block contributes its block (B tokens);
//   - a slot whose block finished in the previous step contributes [finished block, next block
//     all masked] (2B tokens) and only the finished block's keys/values are kept: its commit
//     forward and the first denoising step of the next block are one forward (the block-causal
//     mask lets the new block see the finished one, and not the other way round);
//   - an idle slot contributes nothing.
//   So a block costs `steps` forwards, not steps + 1, and 5B tokens for B = steps = 4.
// With SamplerOptions::pack_chunks (the default) the forward's dense layers run on those tokens
// only (a packed chunk, Qwen3LM::chunk_layout); without, or when nothing would be saved, every
// slot is padded to the longest chunk (2B in a step where any slot commits). lm_head runs on
// each slot's current block only. The layout (positions, cache slots, mask) is built on the host
// and copied over in one non-blocking copy, and only when it changes: when a slot joins, ends,
// finishes a block or has committed one, not in the steps in between.
// Slots decode at their own pace (prompt tails and the dynamic strategies make blocks take
// different numbers of steps); a slot whose sequence ends frees its cache row and the next
// waiting request joins at the start of the next step (its whole prompt blocks prefilled in a
// separate forward over the joining requests only).
//
// Everything per token stays on the model's device as tensors over all slots: drawing, confidence,
// remasking, trace bookkeeping, starting the next blocks. The host synchronises once per step, in
// step(), with one copy of the [max_batch, 3B+1] state of the blocks (which finished, their tokens,
// trace steps and log-probs), because it decides which sequences end and what the next forward
// looks like.
//
// Randomness comes from one generator seeded by SamplerOptions.seed: a run is reproducible for the
// same seed, options and request order (the batch layout is part of the draw order).
//
// One thread drives a sampler (not thread-safe). After step() returns an Internal error the
// sampler's state is undefined: discard it.
//
// On a GPU (SamplerOptions::cuda_graphs) the forward is replayed from CUDA graphs
// (chunk_forward_graphs.h): the layout is then padded, with its key slots rounded up so that the
// cache's growth maps onto a few graph shapes. Drawing, remasking and the host readback stay
// eager: a few dozen kernels a step against the forward's thousands. Not done yet: capturing
// those too, which needs the graph-safe generator state and the end-of-sequence checks on the
// device so that the host reads the finished blocks back every few steps only.
#pragma once

#include <ATen/core/Generator.h>
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <deque>
#include <memory>
#include <vector>

#include "common/status.h"
#include "model/kv_cache.h"
#include "model/qwen3.h"
#include "rollout/chunk_forward_graphs.h"
#include "rollout/generation.h"

namespace dice {

class BlockDiffusionSampler {
 public:
  // Checks `options` against the model (block size, mask id, vocabulary) and allocates the KV
  // cache: max_batch x max_sequence_length tokens on the model's device and dtype.
  static Result<std::unique_ptr<BlockDiffusionSampler>> create(Qwen3LM model,
                                                               const SamplerOptions& options);

  // Queues a request. InvalidArgument if the prompt is empty, holds ids outside the vocabulary
  // (or the mask id), or prompt + max_new_tokens + block_size exceeds max_sequence_length.
  Status add_request(GenerationRequest request);

  // Admits waiting requests into free slots, then runs one denoising step of every running
  // sequence. Sequences that end move to take_finished(). Internal on a LibTorch error.
  Status step();

  // The results of sequences finished since the last call, in the order they finished.
  std::vector<GenerationResult> take_finished();

  // Drops every waiting and running sequence (their partial results are discarded and their slots
  // freed); returns their ids. Results already finished stay for take_finished().
  std::vector<uint64_t> cancel_all();

  // Samples from now on by `sampling` (a group's own: RolloutRequest.sampling). Only while idle:
  // InvalidArgument otherwise, and InvalidArgument naming the field for options the model cannot
  // take (check_sampler_options: block_size must stay the model's).
  Status set_sampling(const SamplingOptions& sampling);

  // Runs `requests` to completion (add_request, step until idle); results in request order.
  Result<std::vector<GenerationResult>> generate(std::vector<GenerationRequest> requests);

  bool idle() const { return waiting_.empty() && running_count_ == 0; }
  int64_t num_waiting() const { return static_cast<int64_t>(waiting_.size()); }
  int64_t num_running() const { return running_count_; }
  const SamplerStats& stats() const { return stats_; }
  const SamplerOptions& options() const { return options_; }

 private:
  struct Slot {
    bool running = false;
    bool commit_pending = false;  // block finished last step; its KV goes in with this step
    int max_new_tokens = 0;
    std::vector<uint32_t> stop_token_ids;
    GenerationResult result;
  };

  BlockDiffusionSampler(Qwen3LM model, const SamplerOptions& options);

  void admit();
  void prefill(const std::vector<int64_t>& rows, const std::vector<std::vector<int64_t>>& prompts);
  // The next forward's layout (layout_, logit_index_, commit_rows_) from the slots' phases and
  // the cache lengths; kept until one of them changes.
  void build_layout();
  // One forward; returns the logits [max_batch, B, vocab] of every slot's current block.
  at::Tensor forward_blocks();
  // Copies the step's results to the host, ends sequences, starts next blocks.
  void harvest(const at::Tensor& done);
  // Appends a finished block to slot `row`'s result; true when the sequence has ended.
  bool append_block(int64_t row, const int64_t* tokens, const int64_t* steps,
                    const float* log_probs);
  at::Tensor row_mask(const std::vector<bool>& rows) const;  // [max_batch] bool on the device

  Qwen3LM model_;
  SamplerOptions options_;
  int64_t block_;  // block_size
  c10::TensorOptions long_options_;
  KvCache cache_;
  at::Generator generator_;

  std::deque<GenerationRequest> waiting_;
  std::vector<Slot> slots_;
  int64_t running_count_ = 0;
  std::vector<GenerationResult> finished_;
  SamplerStats stats_;

  // Per slot, on the model's device:
  at::Tensor blocks_;       // [S, B] int64: the current block (mask id where still masked)
  at::Tensor prev_blocks_;  // [S, B] int64: the finished block whose KV this step stores
  at::Tensor start_masks_;  // [S] int64: masks the current block started with
  at::Tensor block_step_;   // [S] int64: denoising steps done on the current block
  at::Tensor unmask_step_;  // [S, B] int64: step that unmasked each position; -1 = prompt/masked
  at::Tensor log_probs_;    // [S, B] float32: sampling log-prob of each committed position
  at::Tensor running_;      // [S] bool
  at::Tensor padding_;      // [S, B] int64: all mask ids (the pad half of a commit chunk)

  // The forward's layout, valid while no slot joins, ends, finishes a block or commits one.
  bool layout_valid_ = false;
  bool layout_commit_ = false;  // some slot commits its finished block in this forward
  CachedChunkLayout layout_;
  at::Tensor logit_index_;  // [S * B] int64: forward tokens lm_head reads; undefined = all
  at::Tensor commit_rows_;  // [S, 1] bool: slots committing (commit forwards only)

  std::unique_ptr<ChunkForwardGraphs> graphs_;  // set when the forwards run from CUDA graphs
};

}  // namespace dice
