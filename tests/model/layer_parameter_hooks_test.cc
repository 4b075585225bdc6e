// Sharded parameters (layer_parameter_hooks.h) change where the weights live, not the math: a
// training forward and backward whose layers gather and free their weights through the hooks
// (a test double that really frees them) give the checkpointed run's loss and gradients, with at
// most one layer's weights materialized at a time.
#include "model/layer_parameter_hooks.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "tests/model/fake_parameter_shards.h"
#include "tests/model/model_test_util.h"

namespace dice {
namespace {

using testing_util::FakeParameterShards;
using testing_util::random_lm;
using testing_util::random_tokens;
using Call = FakeParameterShards::Call;

ModelConfig three_layer_config() {
  ModelConfig c = testing_util::tiny_config();
  c.num_hidden_layers = 3;  // a middle layer too: its calls sit between two others'
  return c;
}

at::Tensor training_loss(Qwen3LMImpl& lm, uint64_t seed = 5) {
  at::manual_seed(seed);
  at::Tensor x_0 = random_tokens(2, 12, lm.config());
  at::Tensor x_t = x_0.masked_fill(at::rand({2, 12}) < 0.5, lm.config().mask_token_id);
  return lm.forward_training(x_t, x_0).log_softmax(-1).pow(2).mean();
}

// A forward's calls on the three layers: each gathered, run and released, first to last.
std::vector<FakeParameterShards::LayerCall> forward_calls() {
  std::vector<FakeParameterShards::LayerCall> calls;
  for (int64_t layer = 0; layer < 3; ++layer) {
    calls.push_back({Call::kMaterialize, layer});
    calls.push_back({Call::kReleaseAfterForward, layer});
  }
  return calls;
}

Qwen3LM checkpointed_lm() {
  Qwen3LM lm = random_lm(three_layer_config(), 21);
  lm->model->activation_checkpointing = true;
  return lm;
}

TEST(LayerParameterHooksTest, ShardedRunHasTheCheckpointedRunsLossAndGradients) {
  Qwen3LM plain = checkpointed_lm();
  at::Tensor plain_loss = training_loss(*plain);
  plain_loss.backward();

  Qwen3LM sharded = checkpointed_lm();
  FakeParameterShards shards(*sharded->model);
  sharded->model->parameter_hooks = &shards;
  ASSERT_EQ(shards.materialized_layers(), 0);
  at::Tensor loss = training_loss(*sharded);
  EXPECT_EQ(shards.materialized_layers(), 0) << "the forward left full weights behind";
  loss.backward();
  EXPECT_EQ(shards.materialized_layers(), 0) << "the backward left full weights behind";
  EXPECT_EQ(plain_loss.item<double>(), loss.item<double>());

  std::vector<NamedParameter> expected = hf_named_parameters(*plain);
  std::vector<NamedParameter> got = hf_named_parameters(*sharded);
  ASSERT_EQ(expected.size(), got.size());
  int sharded_parameters = 0;
  for (std::size_t i = 0; i < expected.size(); ++i) {
    const std::string& name = expected[i].name;
    const at::Tensor& want = expected[i].tensor.grad();
    ASSERT_TRUE(want.defined()) << name;
    EXPECT_GT(want.abs().max().item<double>(), 0.0) << name << " got no gradient";
    const bool in_a_layer = name.rfind("model.layers.", 0) == 0;
    EXPECT_EQ(shards.holds(got[i].tensor), in_a_layer) << name;
    if (!in_a_layer) {  // embeddings, final norm, lm_head: replicated, gradient in place
      EXPECT_TRUE(at::allclose(want, got[i].tensor.grad(), 0.0, 1e-6)) << name;
      continue;
    }
    ++sharded_parameters;
    EXPECT_FALSE(got[i].tensor.grad().defined()) << name << ": after_backward moved it out";
    at::Tensor stored = shards.gradient(got[i].tensor);
    ASSERT_TRUE(stored.defined()) << name;
    EXPECT_TRUE(at::allclose(want, stored, 0.0, 1e-6)) << name;
  }
  EXPECT_EQ(sharded_parameters, 3 * 11);  // 4 projections, 2 head norms, 3 MLP, 2 layer norms
}

TEST(LayerParameterHooksTest, OneLayerAtATimeInForwardThenBackwardOrder) {
  Qwen3LM lm = checkpointed_lm();
  FakeParameterShards shards(*lm->model);
  lm->model->parameter_hooks = &shards;
  training_loss(*lm).backward();

  EXPECT_EQ(shards.peak_materialized_layers(), 1);
  // Per layer: materialize, release (forward, first to last), then materialize, after_backward
  // (backward, last to first).
  std::vector<FakeParameterShards::LayerCall> expected = forward_calls();
  for (int64_t layer = 2; layer >= 0; --layer) {
    expected.push_back({Call::kMaterialize, layer});
    expected.push_back({Call::kAfterBackward, layer});
  }
  EXPECT_EQ(shards.calls(), expected);
}

// Micro-batches (and PPO epochs) run several forwards and backwards between optimizer steps:
// weights freed and gathered again after a backward serve the next one, and each layer's
// gradients add up as they would in place.
TEST(LayerParameterHooksTest, SecondMicroBatchAddsToTheFirstsGradients) {
  Qwen3LM plain = checkpointed_lm();
  Qwen3LM sharded = checkpointed_lm();
  FakeParameterShards shards(*sharded->model);
  sharded->model->parameter_hooks = &shards;
  for (uint64_t seed : {5, 6}) {
    training_loss(*plain, seed).backward();
    training_loss(*sharded, seed).backward();
  }
  EXPECT_EQ(shards.calls().size(), 2u * 4 * 3);
  EXPECT_EQ(shards.materialized_layers(), 0);
  std::vector<NamedParameter> expected = hf_named_parameters(*plain);
  std::vector<NamedParameter> got = hf_named_parameters(*sharded);
  for (std::size_t i = 0; i < expected.size(); ++i) {
    const at::Tensor& param = got[i].tensor;
    at::Tensor grad = shards.holds(param) ? shards.gradient(param) : param.grad();
    EXPECT_TRUE(at::allclose(expected[i].tensor.grad(), grad, 0.0, 1e-6)) << expected[i].name;
  }
}

TEST(LayerParameterHooksTest, ForwardWithoutGradientsGathersAndReleasesOnly) {
  Qwen3LM plain = checkpointed_lm();
  Qwen3LM sharded = checkpointed_lm();
  FakeParameterShards shards(*sharded->model);
  sharded->model->parameter_hooks = &shards;
  at::Tensor tokens = random_tokens(1, 8, plain->config());
  torch::NoGradGuard no_grad;
  EXPECT_TRUE(
      at::equal(plain->forward_block_causal(tokens), sharded->forward_block_causal(tokens)));
  EXPECT_EQ(shards.peak_materialized_layers(), 1);
  EXPECT_EQ(shards.materialized_layers(), 0);
  EXPECT_EQ(shards.calls(), forward_calls());
}

TEST(LayerParameterHooksTest, RefusedWithoutActivationCheckpointing) {
  Qwen3LM lm = checkpointed_lm();
  FakeParameterShards shards(*lm->model);
  lm->model->parameter_hooks = &shards;
  lm->model->activation_checkpointing = false;
  try {
    training_loss(*lm);
    FAIL() << "a forward with sharded parameters and no activation checkpointing ran";
  } catch (const c10::Error& e) {
    EXPECT_NE(std::string(e.what()).find("need activation_checkpointing"), std::string::npos)
        << e.what();
  }
  EXPECT_TRUE(shards.calls().empty()) << "refused before touching any layer";
}

}  // namespace
}  // namespace dice
