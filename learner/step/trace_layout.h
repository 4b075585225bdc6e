// TraceRL's view of one sampled sequence (REFERENCE section 3): the rollout recorded, for every
// response token, the denoising step of its block that unmasked it. For each step k (or each run
// of `shrink` consecutive steps k..k+s-1) the policy is scored on the tokens unmasked at those
// steps, given the prompt and the tokens of earlier steps:
//
//   noisy_k[i] = mask             if step(i) >= k          (response tokens not yet unmasked)
//              = token[i]         otherwise                (prompt tokens have no step: kept)
//   scored_k   = { i : k <= step(i) < k + s }
//
// Fed to the training layout (model/attention_masks.h (c)) as x_t = noisy_k, x_0 = the clean
// sequence, every block of noisy_k sees its own noisy block and the clean blocks before it: exactly
// the context the sampler had when it unmasked those tokens, so all blocks are scored in one
// forward per k. Tokens the sampler committed in the final block after the end (a stop token, or
// max_new_tokens) come with the sample as its tail and are placed after the response like any
// token of their step; the sequence is then padded with the mask token to whole blocks.
//
// Plain C++ (no LibTorch), so the layout is tested without a model.
#pragma once

#include <cstdint>
#include <vector>

#include "common/status.h"

namespace dice {

// One sampled sequence, as the learner trains on it.
struct TraceSample {
  std::vector<std::int64_t> prompt;        // prompt token ids, as the rollout encoded them
  std::vector<std::int64_t> response;      // generated token ids (Candidate.tokenIds)
  std::vector<std::int32_t> unmask_steps;  // per response token (Candidate.unmaskStep)
  std::vector<float> old_log_probs;        // per response token, sampling policy
  double advantage = 0.0;                  // z-scored group advantage
  // Per response token, a weight on its loss term (empty: 1): decoupled PPO's truncated
  // importance weight (learner/train/policy_trainer.h, PolicyTrainerOptions::importance_cap).
  std::vector<float> importance;
  std::uint64_t policy_version = 0;  // of the weights that sampled it (Candidate.policyVersion)
  // The softmax temperature it was sampled at (its request's sampling: rollout.sampling or its
  // phase's; 0, greedy, counts as 1). Its sampling log-probs are of that softmax, so the update
  // scores it at the same temperature.
  double temperature = 1.0;
  // The rest of the final block after the response (Candidate.tailTokenIds): context only, shown
  // in view k where its step < k, never scored.
  std::vector<std::int64_t> tail;
  std::vector<std::int32_t> tail_unmask_steps;
};

// One forward's worth of a sample: the noisy copy for steps [first_step, first_step + shrink).
struct TraceView {
  int first_step = 0;
  std::vector<std::int64_t> noisy;      // [length]
  std::vector<std::int64_t> positions;  // scored positions (ascending), indices into [0, length)
  std::vector<std::int64_t> targets;    // the token at each scored position
  std::vector<float> old_log_probs;     // its sampling log-prob
  std::vector<float> importance;        // its loss term's weight (TraceSample::importance)
};

struct TraceLayout {
  std::vector<std::int64_t> clean;  // x_0: prompt + response + mask padding; [length]
  std::vector<TraceView> views;     // only views that score at least one token, by first_step
  std::int64_t prompt_length = 0;   // response token i sits at position prompt_length + i
  std::int64_t response_length = 0;
  double temperature = 1.0;  // its sample's, > 0 (a greedy 0 becomes 1)
};

struct TraceLayoutOptions {
  std::int64_t block_size = 4;
  int denoising_steps = 4;
  int shrink = 1;  // consecutive steps scored together (DICE: 1)
  std::int64_t mask_token_id = 151669;
};

// InvalidArgument when the per-token lists differ in length from the response (or the tail's), a
// step is outside [0, denoising_steps), a token is the mask token, the tail reaches past the
// final block, the temperature is negative or not finite, or the options are not positive.
Result<TraceLayout> trace_layout(const TraceSample& sample, const TraceLayoutOptions& options);

}  // namespace dice
