// parameter_bytes / gpu_bytes: what a GPU holds per parameter under each shard mode, and the
// DICE model sizes on 1, 2, 4 and 8 GPUs against an 80 GB H100.
#include "learner/shard_memory.h"

#include <gtest/gtest.h>

namespace dice {
namespace {

constexpr double kGB = 1e9;

TEST(ShardMemoryTest, AReplicaHoldsSixteenBytesAParameterWhateverTheGpus) {
  for (int gpus : {1, 2, 4, 8}) {
    const ParameterBytes b = parameter_bytes(ShardMode::kReplica, gpus);
    EXPECT_EQ(b.weights, 2);
    EXPECT_EQ(b.gradients, 2);
    EXPECT_EQ(b.masters, 4);
    EXPECT_EQ(b.moments, 8);
    EXPECT_EQ(b.total(), 16);
  }
  // Float32 weights are their own masters.
  EXPECT_EQ(parameter_bytes(ShardMode::kReplica, 4, 4).total(), 16);
}

TEST(ShardMemoryTest, ShardingTheOptimizerDividesMastersAndMomentsByTheGpus) {
  EXPECT_EQ(parameter_bytes(ShardMode::kOptimizer, 1).total(), 16);  // one GPU: nothing to split
  EXPECT_EQ(parameter_bytes(ShardMode::kOptimizer, 2).total(), 10);
  EXPECT_EQ(parameter_bytes(ShardMode::kOptimizer, 4).total(), 7);
  EXPECT_EQ(parameter_bytes(ShardMode::kOptimizer, 8).total(), 5.5);
  EXPECT_EQ(parameter_bytes(ShardMode::kOptimizer, 8).masters, 0.5);
  // A float32 model keeps a float32 copy of its chunk: 4 + 4 + 12 / N.
  EXPECT_EQ(parameter_bytes(ShardMode::kOptimizer, 4, 4).total(), 11);
}

TEST(ShardMemoryTest, TheEightBillionModelFitsAnH100OnlyWithTheOptimizerSharded) {
  // Before activations: 8.2B x 16 bytes = 131 GB on every GPU however many there are; sharded
  // over 8 GPUs, 8.2B x 5.5 = 45 GB.
  EXPECT_NEAR(gpu_bytes(kParams8B, ShardMode::kReplica, 8) / kGB, 131.2, 0.1);
  EXPECT_NEAR(gpu_bytes(kParams8B, ShardMode::kOptimizer, 8) / kGB, 45.1, 0.1);
  EXPECT_GT(gpu_bytes(kParams8B, ShardMode::kReplica, 8), 80 * kGB);
  EXPECT_LT(gpu_bytes(kParams8B, ShardMode::kOptimizer, 8), 80 * kGB);
  EXPECT_GT(gpu_bytes(kParams8B, ShardMode::kOptimizer, 2), 80 * kGB);  // 82 GB: not on two
  EXPECT_NEAR(gpu_bytes(kParams4B, ShardMode::kReplica, 1) / kGB, 64, 1e-9);
  EXPECT_NEAR(gpu_bytes(kParams4B, ShardMode::kOptimizer, 4) / kGB, 28, 1e-9);
  EXPECT_NEAR(gpu_bytes(kParams1700M, ShardMode::kOptimizer, 8) / kGB, 9.35, 1e-9);
}

}  // namespace
}  // namespace dice
