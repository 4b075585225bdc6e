// parameter_bytes / gpu_bytes: what a GPU holds per parameter under each shard mode;
// model_parameters: the weights of the checked-in SDAR shapes; the DICE model sizes on 1, 2, 4
// and 8 GPUs against an 80 GB H100.
#include "learner/parallel/shard_memory.h"

#include <gtest/gtest.h>

#include <string>

#include "options/dice_config.h"

namespace dice {
namespace {

constexpr double kGB = 1e9;

// The parameter count of configs/models/<file>.
double shape_parameters(const std::string& file) {
  Result<ModelShape> shape =
      load_model_shape(std::string(DICE_SOURCE_DIR) + "/configs/models/" + file);
  EXPECT_TRUE(shape.ok()) << shape.status().to_string();
  return shape.ok() ? model_parameters(*shape) : 0;
}

TEST(ShardMemoryTest, ParameterCountsOfTheCheckedInShapes) {
  // The Qwen3 model cards: 8.2B with 6.95B outside the embeddings, 1.7B with 1.4B, and 3.6B
  // outside the embeddings at 4B. 8B: two 151,936 x 4,096 vocabulary matrices.
  EXPECT_EQ(shape_parameters("sdar-8b.yaml"), 8190735360.0);
  EXPECT_EQ(8190735360.0 - 2 * 151936.0 * 4096, 6946075648.0);
  // 1.7B shares its embedding with the LM head: one 151,936 x 2,048 matrix.
  EXPECT_EQ(shape_parameters("sdar-1.7b.yaml"), 1720574976.0);
  // 4B's file says untied (Qwen3-4B's card ties them: 4.0B): two 151,936 x 2,560 matrices.
  EXPECT_EQ(shape_parameters("sdar-4b.yaml"), 4411424256.0);
  ModelShape tiny;
  tiny.vocab_size = 10;
  tiny.hidden_size = 4;
  tiny.intermediate_size = 6;
  tiny.num_hidden_layers = 2;
  tiny.num_attention_heads = 2;
  tiny.num_key_value_heads = 1;
  tiny.head_dim = 3;
  // Per layer: q 4x6, k and v 4x3 each, o 6x4, MLP 3x4x6, norms 4 + 4 + 3 + 3 = 158.
  EXPECT_EQ(model_parameters(tiny), 2 * 40 + 2 * 158 + 4);
  tiny.tie_word_embeddings = true;
  EXPECT_EQ(model_parameters(tiny), 40 + 2 * 158 + 4);
}

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
  // Before activations: 8.19B x 16 bytes = 131 GB on every GPU however many there are; sharded
  // over 8 GPUs, 8.19B x 5.5 = 45 GB.
  const double b8 = shape_parameters("sdar-8b.yaml");
  EXPECT_NEAR(gpu_bytes(b8, ShardMode::kReplica, 8) / kGB, 131.05, 0.01);
  EXPECT_NEAR(gpu_bytes(b8, ShardMode::kOptimizer, 8) / kGB, 45.05, 0.01);
  EXPECT_GT(gpu_bytes(b8, ShardMode::kReplica, 8), 80 * kGB);
  EXPECT_LT(gpu_bytes(b8, ShardMode::kOptimizer, 8), 80 * kGB);
  EXPECT_GT(gpu_bytes(b8, ShardMode::kOptimizer, 2), 80 * kGB);  // 82 GB: not on two
  const double b4 = shape_parameters("sdar-4b.yaml");
  EXPECT_NEAR(gpu_bytes(b4, ShardMode::kReplica, 1) / kGB, 70.58, 0.01);
  EXPECT_NEAR(gpu_bytes(b4, ShardMode::kOptimizer, 4) / kGB, 30.88, 0.01);
  EXPECT_NEAR(gpu_bytes(shape_parameters("sdar-1.7b.yaml"), ShardMode::kOptimizer, 8) / kGB, 9.46,
              0.01);
}

}  // namespace
}  // namespace dice
