// What a rollout worker starts from, read off the run's config (pure; dice-rollout's main uses
// it, tests/rollout/worker_start_test.cc checks it).
#pragma once

#include <cstdint>
#include <string>

#include "options/dice_config.h"

namespace dice {

// The policy a worker samples before the learner's first push: the learner's starting weights
// (learner.init_checkpoint, e.g. an SFT checkpoint that RL starts from) where set, else
// rollout.model_path. Sampling from any other weights than the learner trains would make the
// first step's recorded log-probs those of another policy.
inline const std::string& initial_policy_path(const DiceConfig& config) {
  return config.learner.init_checkpoint.empty() ? config.rollout.model_path
                                                : config.learner.init_checkpoint;
}

// The seed of worker `worker_index`'s sampler: the run's learner.seed, offset per worker so that
// workers of one run draw differently and two runs with different seeds (the arms of an
// experiment) sample differently from the same weights. learner.seed 0 and worker 0 give seed 0.
inline std::uint64_t sampler_seed(std::uint64_t run_seed, int worker_index) {
  constexpr std::uint64_t kWorkerStride = 0x9E3779B97F4A7C15ull;  // 2^64 / golden ratio
  return run_seed + kWorkerStride * static_cast<std::uint64_t>(worker_index < 0 ? 0 : worker_index);
}

}  // namespace dice
