// Shared clean copies (attention_masks.h (d), Qwen3LM::hidden_training_views): noisy views that
// run beside one copy of their clean sequence get exactly the hidden states, and the weights the
// same gradients, as each view run with a clean copy of its own (hidden_training), with and
// without activation checkpointing.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <vector>

#include "model/attention_masks.h"
#include "tests/model/model_test_util.h"

namespace dice {
namespace {

using testing_util::random_lm;
using testing_util::random_tokens;
using testing_util::tiny_config;

struct Batch {
  at::Tensor x_0;                   // [C, L] clean
  at::Tensor x_t;                   // [V, L] views
  std::vector<int64_t> view_clean;  // each view's clean row
};

// Two clean sequences of 12 tokens (one padded from 8 with the mask token, as the trainer pads),
// three views of the first and two of the second, in mixed order.
Batch batch() {
  at::manual_seed(6);
  Batch b;
  b.x_0 = random_tokens(2, 12, tiny_config());
  b.x_0.narrow(1, 8, 4)[1].fill_(tiny_config().mask_token_id);
  b.view_clean = {0, 1, 0, 0, 1};
  std::vector<at::Tensor> views;
  for (int64_t c : b.view_clean) {
    at::Tensor clean = b.x_0[c].unsqueeze(0);
    views.push_back(clean.masked_fill(at::rand({1, 12}) < 0.5, tiny_config().mask_token_id));
  }
  b.x_t = at::cat(views, 0);
  return b;
}

// The views' hidden states one by one with their own clean copies.
at::Tensor one_by_one(Qwen3LMImpl& lm, const Batch& b) {
  std::vector<at::Tensor> out;
  for (std::size_t v = 0; v < b.view_clean.size(); ++v) {
    out.push_back(lm.hidden_training(b.x_t[static_cast<int64_t>(v)].unsqueeze(0),
                                     b.x_0[b.view_clean[v]].unsqueeze(0)));
  }
  return at::cat(out, 0);
}

TEST(TrainingViewsTest, EachViewGetsWhatItGetsWithItsOwnCleanCopy) {
  torch::NoGradGuard no_grad;
  Qwen3LM lm = random_lm(tiny_config(), 4);
  const Batch b = batch();
  at::Tensor shared = lm->hidden_training_views(b.x_t, b.x_0, b.view_clean);
  ASSERT_EQ(shared.sizes(), (std::vector<int64_t>{5, 12, tiny_config().hidden_size}));
  EXPECT_TRUE(at::allclose(shared, one_by_one(*lm, b), 1e-5, 1e-6));
}

TEST(TrainingViewsTest, GradientsEqualTheOneByOneLayoutWithAndWithoutCheckpointing) {
  const Batch b = batch();
  at::manual_seed(9);
  const at::Tensor weights = at::randn({5, 12, tiny_config().hidden_size});
  for (bool checkpointing : {false, true}) {
    SCOPED_TRACE(checkpointing ? "checkpointing" : "plain");
    std::vector<std::vector<at::Tensor>> grads;
    for (bool shared : {true, false}) {
      Qwen3LM lm = random_lm(tiny_config(), 4);
      lm->model->activation_checkpointing = checkpointing;
      at::Tensor hidden =
          shared ? lm->hidden_training_views(b.x_t, b.x_0, b.view_clean) : one_by_one(*lm, b);
      (hidden * weights).sum().backward();
      grads.emplace_back();
      // lm_head gets none (hidden states only): kept as undefined.
      for (const at::Tensor& p : lm->parameters()) {
        grads.back().push_back(p.grad().defined() ? p.grad().clone() : at::Tensor());
      }
    }
    std::size_t compared = 0;
    for (std::size_t i = 0; i < grads[0].size(); ++i) {
      ASSERT_EQ(grads[0][i].defined(), grads[1][i].defined()) << "parameter " << i;
      if (!grads[0][i].defined()) continue;
      EXPECT_TRUE(at::allclose(grads[0][i], grads[1][i], 1e-4, 1e-5)) << "parameter " << i;
      ++compared;
    }
    EXPECT_GE(compared, grads[0].size() - 1);
  }
}

TEST(TrainingViewsTest, TheViewsMaskIsTheNoisyRowsOfTheTrainingMask) {
  at::Tensor views = training_views_mask(8, 4, at::kCPU).squeeze();  // [8, 16]
  ASSERT_EQ(views.sizes(), (std::vector<int64_t>{8, 16}));
  // Query 5 (block 1): its own keys 4..7, and the clean copy's block 0 (keys 8 + 0..3).
  for (int64_t k = 0; k < 16; ++k) {
    EXPECT_EQ(views[5][k].item<bool>(), (k >= 4 && k < 8) || (k >= 8 && k < 12)) << k;
  }
}

TEST(TrainingViewsTest, BadShapesAreRefused) {
  torch::NoGradGuard no_grad;
  Qwen3LM lm = random_lm(tiny_config(), 4);
  const Batch b = batch();
  EXPECT_THROW(lm->hidden_training_views(b.x_t, b.x_0, {0, 1}), c10::Error);
  EXPECT_THROW(lm->hidden_training_views(b.x_t, b.x_0, {0, 1, 0, 0, 2}), c10::Error);
  EXPECT_THROW(lm->hidden_training_views(b.x_t, b.x_0.narrow(1, 0, 8), b.view_clean), c10::Error);
}

}  // namespace
}  // namespace dice
