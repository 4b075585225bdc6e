// Activation checkpointing (layer_checkpoint.h) changes memory, not math: the same training
// forward with and without it gives the same loss and the same gradient for every parameter.
#include "model/layer_checkpoint.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include "tests/model/model_test_util.h"

namespace dice {
namespace {

using testing_util::random_lm;
using testing_util::random_tokens;
using testing_util::tiny_config;

// Loss of a training forward and the gradients it leaves, by checkpoint name.
std::pair<double, std::vector<at::Tensor>> loss_and_grads(bool checkpointing) {
  Qwen3LM lm = random_lm(tiny_config(), 21);
  lm->model->activation_checkpointing = checkpointing;
  at::manual_seed(5);
  at::Tensor x_0 = random_tokens(2, 12, tiny_config());
  at::Tensor x_t = x_0.masked_fill(at::rand({2, 12}) < 0.5, tiny_config().mask_token_id);
  at::Tensor loss = lm->forward_training(x_t, x_0).log_softmax(-1).pow(2).mean();
  loss.backward();
  std::vector<at::Tensor> grads;
  for (NamedParameter& p : hf_named_parameters(*lm)) grads.push_back(p.tensor.grad().clone());
  return {loss.item<double>(), grads};
}

TEST(LayerCheckpointTest, SameLossAndGradientsAsAPlainForward) {
  auto [plain_loss, plain] = loss_and_grads(false);
  auto [checked_loss, checked] = loss_and_grads(true);
  EXPECT_DOUBLE_EQ(plain_loss, checked_loss);
  ASSERT_EQ(plain.size(), checked.size());
  for (std::size_t i = 0; i < plain.size(); ++i) {
    ASSERT_TRUE(plain[i].defined() && checked[i].defined()) << "parameter " << i;
    EXPECT_GT(plain[i].abs().max().item<double>(), 0.0) << "parameter " << i << " got no gradient";
    EXPECT_TRUE(at::allclose(plain[i], checked[i], 1e-5, 1e-7)) << "parameter " << i;
  }
}

TEST(LayerCheckpointTest, InferenceAndCachedForwardsAreUntouched) {
  Qwen3LM lm = random_lm(tiny_config(), 21);
  at::Tensor tokens = random_tokens(1, 8, tiny_config());
  at::Tensor plain;
  {
    torch::NoGradGuard no_grad;
    plain = lm->forward_block_causal(tokens);
  }
  lm->model->activation_checkpointing = true;
  torch::NoGradGuard no_grad;  // no gradients: nothing to recompute, the layers run directly
  EXPECT_TRUE(at::equal(plain, lm->forward_block_causal(tokens)));
}

}  // namespace
}  // namespace dice
