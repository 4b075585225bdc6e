// Attention in query tiles (model/tiled_attention.h): each tile reads the key ranges its queries
// may see, and nothing else; the result and its gradients are those of one dense attention over
// the whole mask, for every training layout, any tile size, grouped-query heads and gathered key
// parts; and the model's training forwards give the same hidden states and gradients tiled as
// untiled.
#include "model/tiled_attention.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <torch/csrc/autograd/autograd.h>

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "model/attention_masks.h"
#include "model/torch_compat.h"
#include "tests/model/model_test_util.h"

namespace dice {
namespace {

using testing_util::random_lm;
using testing_util::random_tokens;
using testing_util::tiny_config;

constexpr double kScale = 0.25;

// The key columns one query row of a plan's tile reads, recovered from computed_fraction() of a
// plan with one query: the tests below check ranges through what is computed, not internals.
double fraction_of_one_tile(const at::Tensor& mask, int64_t begin, int64_t end) {
  return TiledAttention::plan(mask.narrow(2, begin, end - begin), end - begin).computed_fraction();
}

TEST(TiledAttentionTest, ABlockCausalTileReadsTheKeysUpToItsLastBlock) {
  const at::Tensor mask = block_causal_mask(16, 4, at::kCPU);
  const TiledAttention plan = TiledAttention::plan(mask, 4);
  EXPECT_EQ(plan.tiles(), 4);
  // Tile t of 4 queries reads keys [0, 4 (t + 1)): 4 x (4 + 8 + 12 + 16) of 16 x 16 scores.
  EXPECT_DOUBLE_EQ(plan.computed_fraction(), 4.0 * (4 + 8 + 12 + 16) / (16 * 16));
  // One tile of everything reads every key: the dense attention.
  EXPECT_DOUBLE_EQ(TiledAttention::plan(mask, 16).computed_fraction(), 1.0);
  EXPECT_DOUBLE_EQ(TiledAttention::plan(mask, 100).computed_fraction(), 1.0);
}

TEST(TiledAttentionTest, AViewTileReadsItsOwnBlockAndTheCleanBlocksBeforeIt) {
  const at::Tensor mask = training_views_mask(16, 4, at::kCPU);  // [1, 1, 16, 32]
  const TiledAttention plan = TiledAttention::plan(mask, 4);
  // Tile t: its own 4 keys and 4 t clean keys; the dense grid is 16 x 32.
  EXPECT_DOUBLE_EQ(plan.computed_fraction(), 4.0 * (4 + 8 + 12 + 16) / (16 * 32));
  // The first tile reads its own block only; the last its own block and 12 clean keys.
  EXPECT_DOUBLE_EQ(fraction_of_one_tile(mask, 0, 4), 4.0 / 32);
  EXPECT_DOUBLE_EQ(fraction_of_one_tile(mask, 12, 16), 16.0 / 32);
}

struct Case {
  const char* name;
  at::Tensor mask;  // [B|1, 1, Q, K]
};

std::vector<Case> training_masks() {
  return {{"block-causal (a)", block_causal_mask(24, 4, at::kCPU)},
          {"training (c)", training_mask(12, 4, at::kCPU)},
          {"views (d)", training_views_mask(20, 4, at::kCPU)},
          {"packed rows (c)", at::cat({packed_training_mask({8, 4}, 4, at::kCPU),
                                       packed_training_mask({4, 8}, 4, at::kCPU)},
                                      0)}};
}

// q [B, 4 heads, Q, 8] over keys and values [B, 2 heads, K, 8], float64, requiring gradients.
struct Inputs {
  at::Tensor q, k, v;
};

Inputs random_inputs(const at::Tensor& mask, int64_t batch) {
  const auto f64 = at::TensorOptions().dtype(at::kDouble);
  return {at::randn({batch, 4, mask.size(2), 8}, f64).requires_grad_(),
          at::randn({batch, 2, mask.size(3), 8}, f64).requires_grad_(),
          at::randn({batch, 2, mask.size(3), 8}, f64).requires_grad_()};
}

TEST(TiledAttentionTest, EveryTileSizeGivesTheDenseAttentionAndItsGradients) {
  at::manual_seed(3);
  for (const Case& c : training_masks()) {
    const Inputs in = random_inputs(c.mask, 2);
    const at::Tensor weights = at::randn({2, 4, c.mask.size(2), 8}, at::kDouble);
    const at::Tensor dense = compat::scaled_dot_product_attention(in.q, in.k, in.v, c.mask, kScale);
    const std::vector<at::Tensor> dense_grads =
        torch::autograd::grad({(dense * weights).sum()}, {in.q, in.k, in.v});
    for (int64_t tile : {1, 3, 4, 8, 1000}) {
      SCOPED_TRACE(std::string(c.name) + ", tile " + std::to_string(tile));
      const TiledAttention plan = TiledAttention::plan(c.mask, tile);
      const at::Tensor tiled = plan.attend(in.q, {{in.k, {}}}, {{in.v, {}}}, kScale);
      EXPECT_TRUE(at::allclose(tiled, dense, 1e-12, 1e-12));
      const std::vector<at::Tensor> grads =
          torch::autograd::grad({(tiled * weights).sum()}, {in.q, in.k, in.v});
      for (std::size_t i = 0; i < grads.size(); ++i) {
        EXPECT_TRUE(at::allclose(grads[i], dense_grads[i], 1e-12, 1e-12)) << "input " << i;
      }
      if (tile == 4) {
        EXPECT_LT(plan.computed_fraction(), 0.75);
      }
    }
  }
}

TEST(TiledAttentionTest, KeyPartsWithRowsAreGatheredAsIfConcatenated) {
  // Layout (d): three views' own keys, then the clean keys of clean rows {1, 0, 1} of two.
  at::manual_seed(4);
  const at::Tensor mask = training_views_mask(16, 4, at::kCPU);
  const auto f64 = at::TensorOptions().dtype(at::kDouble);
  const at::Tensor q = at::randn({3, 4, 16, 8}, f64);
  const at::Tensor own_k = at::randn({3, 2, 16, 8}, f64), own_v = at::randn({3, 2, 16, 8}, f64);
  const at::Tensor clean_k = at::randn({2, 2, 16, 8}, f64).requires_grad_();
  const at::Tensor clean_v = at::randn({2, 2, 16, 8}, f64);
  const at::Tensor rows = at::tensor(std::vector<int64_t>{1, 0, 1});
  const at::Tensor dense = compat::scaled_dot_product_attention(
      q, at::cat({own_k, clean_k.index_select(0, rows)}, 2),
      at::cat({own_v, clean_v.index_select(0, rows)}, 2), mask, kScale);
  const at::Tensor dense_grad = torch::autograd::grad({dense.sum()}, {clean_k})[0];
  const at::Tensor tiled = TiledAttention::plan(mask, 4).attend(
      q, {{own_k, {}}, {clean_k, rows}}, {{own_v, {}}, {clean_v, rows}}, kScale);
  EXPECT_TRUE(at::allclose(tiled, dense, 1e-12, 1e-12));
  // Clean row 1 serves two views: its gradient sums over both, as the gathered copy's does.
  EXPECT_TRUE(
      at::allclose(torch::autograd::grad({tiled.sum()}, {clean_k})[0], dense_grad, 1e-12, 1e-12));
}

TEST(TiledAttentionTest, BadPlansAndInputsAreRefused) {
  const at::Tensor mask = block_causal_mask(8, 4, at::kCPU);
  EXPECT_THROW(TiledAttention::plan(mask, 0), c10::Error);
  EXPECT_THROW(TiledAttention::plan(mask.to(at::kFloat), 4), c10::Error);
  EXPECT_THROW(TiledAttention::plan(mask.squeeze(0), 4), c10::Error);
  // A query that may attend to nothing has no softmax: refused when planned, not NaN later.
  at::Tensor blind = mask.clone();
  blind[0][0][5].fill_(false);
  EXPECT_THROW(TiledAttention::plan(blind, 4), c10::Error);
  const TiledAttention plan = TiledAttention::plan(mask, 4);
  const at::Tensor x = at::randn({1, 2, 8, 8});
  EXPECT_THROW(plan.attend(x.narrow(2, 0, 4), {{x, {}}}, {{x, {}}}, kScale), c10::Error);
  EXPECT_THROW(plan.attend(x, {{x.narrow(2, 0, 4), {}}}, {{x, {}}}, kScale), c10::Error);
}

// The model's three training entry points, tiled (attention_tile 4, one block; and 8) against one
// tile: the same hidden states, and the same weight gradients, with and without checkpointing.
TEST(TiledAttentionTest, TrainingForwardsAreTheSameTiledAndUntiled) {
  const ModelConfig config = tiny_config();
  at::manual_seed(5);
  const at::Tensor x_0 = random_tokens(2, 16, config);
  const at::Tensor x_t = x_0.masked_fill(at::rand({2, 16}) < 0.5, config.mask_token_id);
  const at::Tensor views = at::cat({x_t, x_t.flip(0)}, 0);  // 4 views of 2 clean rows
  using Forward = std::function<at::Tensor(Qwen3LMImpl&)>;
  const std::vector<std::pair<const char*, Forward>> forwards = {
      {"hidden_training", [&](Qwen3LMImpl& lm) { return lm.hidden_training(x_t, x_0); }},
      {"hidden_training_rows",
       [&](Qwen3LMImpl& lm) {
         return lm.hidden_training_rows(x_t, x_0, {{8, 8}, {12, 4}});
       }},
      {"hidden_training_views", [&](Qwen3LMImpl& lm) {
         return lm.hidden_training_views(views, x_0, {0, 1, 1, 0});
       }}};
  for (const auto& [name, forward] : forwards) {
    for (bool checkpointing : {false, true}) {
      SCOPED_TRACE(std::string(name) + (checkpointing ? ", checkpointing" : ""));
      std::vector<at::Tensor> hidden;
      std::vector<std::vector<at::Tensor>> grads;
      for (int64_t tile : {0, 4, 8}) {
        Qwen3LM lm = random_lm(config, 7);
        lm->model->activation_checkpointing = checkpointing;
        lm->model->attention_tile = tile;
        hidden.push_back(forward(*lm));
        hidden.back().pow(2).sum().backward();
        grads.emplace_back();
        for (const at::Tensor& p : lm->parameters()) {
          if (p.grad().defined()) grads.back().push_back(p.grad().clone());
        }
      }
      for (std::size_t t = 1; t < hidden.size(); ++t) {
        EXPECT_TRUE(at::allclose(hidden[t], hidden[0], 1e-5, 1e-6)) << "tiling " << t;
        ASSERT_EQ(grads[t].size(), grads[0].size());
        for (std::size_t i = 0; i < grads[0].size(); ++i) {
          EXPECT_TRUE(at::allclose(grads[t][i], grads[0][i], 1e-4, 1e-5)) << "parameter " << i;
        }
      }
    }
  }
}

}  // namespace
}  // namespace dice
