// A rollout worker's start (rollout/worker_start.h): the policy it samples before the first push
// and its sampler's seed.
#include "rollout/worker_start.h"

#include <gtest/gtest.h>

#include <set>

namespace dice {
namespace {

TEST(WorkerStartTest, SamplesTheLearnersStartingWeights) {
  DiceConfig config;
  config.rollout.model_path = "/models/random-init";
  EXPECT_EQ(initial_policy_path(config), "/models/random-init");
  config.learner.init_checkpoint = "/runs/x/checkpoints/run/phase-sft";
  EXPECT_EQ(initial_policy_path(config), "/runs/x/checkpoints/run/phase-sft");
}

TEST(WorkerStartTest, SeedsDifferByRunAndWorker) {
  EXPECT_EQ(sampler_seed(0, 0), 0u);
  EXPECT_EQ(sampler_seed(7, 0), 7u);
  std::set<std::uint64_t> seen;
  for (std::uint64_t run : {0u, 1u, 2u}) {
    for (int worker = 0; worker < 4; ++worker) seen.insert(sampler_seed(run, worker));
  }
  EXPECT_EQ(seen.size(), 12u);
  EXPECT_EQ(sampler_seed(3, -1), sampler_seed(3, 0));
}

}  // namespace
}  // namespace dice
