// parameter_bytes / gpu_state: what a GPU holds per parameter and in all under each shard mode;
// model_parameters / layer_parameters: the weights of the checked-in SDAR shapes; the DICE model
// sizes on 1, 2, 4 and 8 GPUs against an 80 GB H100.
#include "learner/parallel/shard_memory.h"

#include <gtest/gtest.h>

#include <string>

#include "options/dice_config.h"

namespace dice {
namespace {

constexpr double kGB = 1e9;

// configs/models/<file>.
ModelShape shape_of(const std::string& file) {
  Result<ModelShape> shape =
      load_model_shape(std::string(DICE_SOURCE_DIR) + "/configs/models/" + file);
  EXPECT_TRUE(shape.ok()) << shape.status().to_string();
  return shape.ok() ? *shape : ModelShape{};
}

double shape_parameters(const std::string& file) {
  return model_parameters(shape_of(file));
}

// A shape small enough to count by hand.
ModelShape tiny_shape() {
  ModelShape tiny;
  tiny.vocab_size = 10;
  tiny.hidden_size = 4;
  tiny.intermediate_size = 6;
  tiny.num_hidden_layers = 2;
  tiny.num_attention_heads = 2;
  tiny.num_key_value_heads = 1;
  tiny.head_dim = 3;
  return tiny;
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
  ModelShape tiny = tiny_shape();
  // Per layer: q 4x6, k and v 4x3 each, o 6x4, MLP 3x4x6, norms 4 + 4 + 3 + 3 = 158.
  EXPECT_EQ(layer_parameters(tiny), 158);
  EXPECT_EQ(model_parameters(tiny), 2 * 40 + 2 * 158 + 4);
  EXPECT_EQ(layer_parameters(shape_of("sdar-8b.yaml")) * 36, 6946075648.0 - 4096);
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

TEST(ShardMemoryTest, ShardingTheParametersDividesALayersBytesByTheGpus) {
  EXPECT_EQ(parameter_bytes(ShardMode::kParameters, 1).total(), 16);  // one GPU: nothing to split
  EXPECT_EQ(parameter_bytes(ShardMode::kParameters, 2).total(), 8);
  EXPECT_EQ(parameter_bytes(ShardMode::kParameters, 8).total(), 2);
  EXPECT_EQ(parameter_bytes(ShardMode::kParameters, 8).weights, 0.25);
  EXPECT_EQ(parameter_bytes(ShardMode::kParameters, 8).gradients, 0.25);
  EXPECT_EQ(parameter_bytes(ShardMode::kParameters, 4, 4).total(), 5);  // float32: 20 / N
}

TEST(ShardMemoryTest, UnderParametersAStepHoldsOneLayerWholeAndGpuZeroEveryLayerBetweenSteps) {
  // 84 parameters outside the layers (two 10 x 4 matrices and the final norm), two layers of 158.
  const ModelShape tiny = tiny_shape();
  const GpuState state = gpu_state(tiny, ShardMode::kParameters, 2);
  // Weights: 84 x 2 whole, 316 x 2 / 2 chunks, one layer whole 158 x 2.
  EXPECT_EQ(state.step.weights, 168 + 316 + 316);
  // Gradients: 84 x 2 in buckets, 316 x 2 / 2 chunks, the running layer's and its flat buffer.
  EXPECT_EQ(state.step.gradients, 168 + 316 + 2 * 316);
  EXPECT_EQ(state.step.masters, 400 * 4 / 2);
  EXPECT_EQ(state.step.moments, 400 * 8 / 2);
  // Between steps, GPU 0: both layers whole (its chunks are slices of them); no running layer.
  EXPECT_EQ(state.between.weights, 168 + 632);
  EXPECT_EQ(state.between.gradients, 168 + 316);
  EXPECT_EQ(state.between.masters, state.step.masters);
  // A tiny model's running layer is a large part of it: here the step holds the most.
  EXPECT_EQ(state.step.total(), 4316);
  EXPECT_EQ(state.between.total(), 3684);
  EXPECT_EQ(state.peak(), 4316);
  // The other modes hold the same in a step and between steps: 16 and 4 + 12 / 2 a parameter.
  EXPECT_EQ(gpu_state(tiny, ShardMode::kReplica, 2).step.total(), 400 * 16);
  EXPECT_EQ(gpu_state(tiny, ShardMode::kOptimizer, 2).between.total(), 400 * 10);
  EXPECT_EQ(gpu_state(tiny, ShardMode::kOptimizer, 2).peak(), 400 * 10);
}

TEST(ShardMemoryTest, TheEightBillionModelFitsAnH100OnlyWithTheOptimizerSharded) {
  // Before activations: 8.19B x 16 bytes = 131 GB on every GPU however many there are; sharded
  // over 8 GPUs, 8.19B x 5.5 = 45 GB.
  const ModelShape s8 = shape_of("sdar-8b.yaml");
  const auto peak = [](const ModelShape& s, ShardMode mode, int gpus) {
    return gpu_state(s, mode, gpus).peak();
  };
  EXPECT_NEAR(peak(s8, ShardMode::kReplica, 8) / kGB, 131.05, 0.01);
  EXPECT_NEAR(peak(s8, ShardMode::kOptimizer, 8) / kGB, 45.05, 0.01);
  EXPECT_GT(peak(s8, ShardMode::kReplica, 8), 80 * kGB);
  EXPECT_LT(peak(s8, ShardMode::kOptimizer, 8), 80 * kGB);
  EXPECT_GT(peak(s8, ShardMode::kOptimizer, 2), 80 * kGB);  // 82 GB: not on two
  const ModelShape s4 = shape_of("sdar-4b.yaml");
  EXPECT_NEAR(peak(s4, ShardMode::kReplica, 1) / kGB, 70.58, 0.01);
  EXPECT_NEAR(peak(s4, ShardMode::kOptimizer, 4) / kGB, 30.88, 0.01);
  EXPECT_NEAR(peak(shape_of("sdar-1.7b.yaml"), ShardMode::kOptimizer, 8) / kGB, 9.46, 0.01);
}

TEST(ShardMemoryTest, ShardedParametersLeaveTheStepAFifthOfTheReplicasStateAtEightBillion) {
  // SDAR-8B on 8 GPUs: in a step 1.24B embedding and LM-head weights at 4 + 12/8 bytes, 6.95B
  // layer weights at 16/8 and one 193M-weight layer at 2 + 2 + 2: 21.9 GB, against 45.1 GB with
  // the optimizer alone sharded; between steps GPU 0 holds the layers whole: 32.9 GB.
  const ModelShape s8 = shape_of("sdar-8b.yaml");
  const GpuState eight = gpu_state(s8, ShardMode::kParameters, 8);
  EXPECT_NEAR(eight.step.total() / kGB, 21.895, 0.001);
  EXPECT_NEAR(eight.between.total() / kGB, 32.893, 0.001);
  EXPECT_NEAR(eight.peak() / kGB, 32.893, 0.001);
  // On four GPUs 46.9 GB, under the optimizer mode's 57.3 GB on four.
  EXPECT_NEAR(gpu_state(s8, ShardMode::kParameters, 4).peak() / kGB, 46.916, 0.001);
  EXPECT_LT(gpu_state(s8, ShardMode::kParameters, 4).peak(),
            gpu_state(s8, ShardMode::kOptimizer, 4).peak());
  // On two GPUs 75.0 GB: under 80 GB, where the optimizer alone sharded needs 82 GB.
  EXPECT_NEAR(gpu_state(s8, ShardMode::kParameters, 2).peak() / kGB, 74.961, 0.001);
  EXPECT_LT(gpu_state(s8, ShardMode::kParameters, 2).peak(), 80 * kGB);
  // On one GPU a little more than a replica: the running layer's weights, gradients and buffer.
  EXPECT_NEAR(gpu_state(s8, ShardMode::kParameters, 1).peak() -
                  gpu_state(s8, ShardMode::kReplica, 1).peak(),
              6 * layer_parameters(s8), 1.0);
}

}  // namespace
}  // namespace dice
