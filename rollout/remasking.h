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
// Ties in confidence or entropy go to the leftmost position. Since every step commits at least
// its quota, a block never needs more than `steps` steps; since q >= 1, it never stalls.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>

#include "options/rollout_options.h"

namespace dice {

// n_k for blocks that started with `start_masks` [R] masks and are at step `step` [R] (int64).
at::Tensor step_quota(const at::Tensor& start_masks, const at::Tensor& step, int64_t steps);

// The positions to commit, [R, block] bool, a subset of `masked` [R, block] bool.
// confidence, entropy: [R, block] float (entropy only read by kEntropyBounded); quota: [R] int64
// from step_quota(); threshold: the confidence threshold or entropy bound.
at::Tensor select_commits(Remasking strategy, const at::Tensor& masked,
                          const at::Tensor& confidence, const at::Tensor& entropy,
                          const at::Tensor& quota, double threshold);

}  // namespace dice
