// Which masked positions of a block one denoising step commits, for a batch of blocks at once
// (tensor ops on the blocks' device; no host loop, no host sync).
//
// A block that starts with m masked positions is finished in at most `steps` steps. Step k
// (0-based) has the quota
//     n_k = m / steps + (k < m % steps ? 1 : 0)     (the remainder goes to the first steps)
// and commits q = clamp(n_k, 1, r) positions or more, r being the masks still left:
//   low_confidence_static   the q masked positions of highest confidence
//   low_confidence_dynamic  every masked position with confidence >= threshold if those are at
//                           least q, else the q of highest confidence
//   sequential              the q leftmost masked positions
//   entropy_bounded         the masked positions in ascending entropy while their summed entropy
//                           stays <= threshold (the entropy bound), if those are at least q,
//                           else the q of lowest entropy
//   random                  q masked positions chosen uniformly at random (from the sampler's
//                           generator, so a seeded run repeats)
// Ties in confidence or entropy go to the leftmost position. Since every step commits at least
// its quota, a block never needs more than `steps` steps; since q >= 1, it never stalls.
//
// Faithful and unfaithful strategies. Every step draws a token at every masked position from the
// policy's softmax (token_draw.h) and records log p[token]; the positions not committed are drawn
// again next step. The learner trains that softmax and takes the recorded log-prob as the
// behaviour policy's (learner/train/policy_trainer.h).
//   faithful: sequential, random, entropy_bounded. Which positions are committed is decided
//     without looking at the drawn tokens (position order, a random order, the entropy of the
//     logits), so a committed token is distributed exactly as the softmax at its step, and the
//     recorded log-prob is the behaviour policy's.
//   not faithful: low_confidence_static, low_confidence_dynamic. They rank by confidence =
//     p[drawn token], so whether a draw is kept depends on the draw: a likely token is committed,
//     an unlikely one is mostly drawn again. Committed tokens are tilted towards the argmax (the
//     rollouts explore less than the softmax would) and the recorded log-prob is not the
//     probability of the policy that produced them. DICE's released settings use
//     low_confidence_dynamic; use a faithful strategy for RL whose ratio should start at the
//     truth.
#pragma once

#include <ATen/core/Generator.h>
#include <ATen/core/Tensor.h>

#include <cstdint>

#include "options/rollout_options.h"

namespace dice {

// n_k for blocks that started with `start_masks` [R] masks and are at step `step` [R] (int64).
at::Tensor step_quota(const at::Tensor& start_masks, const at::Tensor& step, int64_t steps);

// The positions to commit, [R, block] bool, a subset of `masked` [R, block] bool.
// confidence, entropy: [R, block] float (entropy only read by ENTROPY_BOUNDED); quota: [R] int64
// from step_quota(); threshold: the confidence threshold or entropy bound; generator: of the
// blocks' device, only used (and then required) by RANDOM, which draws one number per position.
at::Tensor select_commits(Remasking strategy, const at::Tensor& masked,
                          const at::Tensor& confidence, const at::Tensor& entropy,
                          const at::Tensor& quota, double threshold,
                          at::Generator* generator = nullptr);

}  // namespace dice
