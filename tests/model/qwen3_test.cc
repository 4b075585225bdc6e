// The model against a plain reference, and the three attention layouts against each other.
#include "model/qwen3.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <cmath>
#include <functional>

#include "model/attention_masks.h"
#include "tests/model/model_test_util.h"

namespace dice {
namespace {

using testing_util::random_lm;
using testing_util::random_tokens;
using testing_util::tiny_config;

constexpr double kTol = 1e-4;  // fp32, logits of order 1

double max_diff(const at::Tensor& a, const at::Tensor& b) {
  EXPECT_EQ(a.sizes(), b.sizes());
  return (a - b).abs().max().item<double>();
}

at::Tensor rms_norm_ref(const at::Tensor& x, const at::Tensor& w, double eps) {
  return x / (x * x).mean(-1, true).add(eps).sqrt() * w;
}

// RoPE written out element by element: pairs (i, i + d/2) rotate by angle pos * theta^(-2i/d).
at::Tensor rope_ref(const at::Tensor& x, const std::vector<int64_t>& positions, double theta) {
  const int64_t len = x.size(0), d = x.size(1), half = d / 2;
  at::Tensor out = at::empty_like(x);
  auto in = x.accessor<float, 2>();
  auto o = out.accessor<float, 2>();
  for (int64_t t = 0; t < len; ++t) {
    for (int64_t i = 0; i < half; ++i) {
      const double angle = positions[t] * std::pow(theta, -2.0 * i / d);
      const double a = in[t][i], b = in[t][i + half];
      o[t][i] = static_cast<float>(a * std::cos(angle) - b * std::sin(angle));
      o[t][i + half] = static_cast<float>(b * std::cos(angle) + a * std::sin(angle));
    }
  }
  return out;
}

// One sequence through the decoder with explicit per-head loops; may_attend(i, j) is the mask.
at::Tensor reference_logits(Qwen3LMImpl& lm, const at::Tensor& tokens,
                            const std::vector<int64_t>& positions,
                            const std::function<bool(int64_t, int64_t)>& may_attend) {
  const ModelConfig& c = lm.config();
  const int64_t len = tokens.size(0), d = c.head_dim;
  const int64_t group = c.num_attention_heads / c.num_key_value_heads;
  at::Tensor mask = at::empty({len, len}, at::kBool);
  for (int64_t i = 0; i < len; ++i) {
    for (int64_t j = 0; j < len; ++j) mask[i][j] = may_attend(i, j);
  }
  at::Tensor h = lm.model->embed_tokens.index_select(0, tokens);
  for (auto& layer : lm.model->layers) {
    auto& attn = *layer->self_attn;
    at::Tensor x = rms_norm_ref(h, layer->input_layernorm->weight, c.rms_norm_eps);
    at::Tensor q = at::matmul(x, attn.q_proj.t());
    at::Tensor k = at::matmul(x, attn.k_proj.t());
    at::Tensor v = at::matmul(x, attn.v_proj.t());
    std::vector<at::Tensor> heads;
    for (int64_t hq = 0; hq < c.num_attention_heads; ++hq) {
      const int64_t hk = hq / group;  // query head -> its key/value head
      at::Tensor qh = q.narrow(1, hq * d, d);
      at::Tensor kh = k.narrow(1, hk * d, d);
      at::Tensor vh = v.narrow(1, hk * d, d);
      qh = rope_ref(rms_norm_ref(qh, attn.q_norm->weight, c.rms_norm_eps), positions, c.rope_theta);
      kh = rope_ref(rms_norm_ref(kh, attn.k_norm->weight, c.rms_norm_eps), positions, c.rope_theta);
      at::Tensor scores = at::matmul(qh, kh.t()) / std::sqrt(static_cast<double>(d));
      scores = scores.masked_fill(mask.logical_not(), -INFINITY);
      heads.push_back(at::matmul(at::softmax(scores, -1), vh));
    }
    h = h + at::matmul(at::cat(heads, 1), attn.o_proj.t());
    at::Tensor y = rms_norm_ref(h, layer->post_attention_layernorm->weight, c.rms_norm_eps);
    at::Tensor gate = at::matmul(y, layer->mlp->gate_proj.t());
    at::Tensor up = at::matmul(y, layer->mlp->up_proj.t());
    h = h + at::matmul(gate * at::sigmoid(gate) * up, layer->mlp->down_proj.t());
  }
  h = rms_norm_ref(h, lm.model->norm->weight, c.rms_norm_eps);
  return at::matmul(h, lm.lm_head.t());
}

std::vector<int64_t> iota(int64_t n) {
  std::vector<int64_t> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = i;
  return v;
}

class Qwen3Test : public ::testing::Test {
 protected:
  void SetUp() override { lm_ = random_lm(config_, 7); }
  torch::NoGradGuard no_grad_;
  ModelConfig config_ = tiny_config();
  Qwen3LM lm_{nullptr};
};

TEST_F(Qwen3Test, BlockCausalMatchesPerHeadReference) {
  const int64_t len = 10;  // two full blocks and a partial one
  at::Tensor tokens = random_tokens(2, len, config_);
  at::Tensor logits = lm_->forward_block_causal(tokens);
  ASSERT_EQ(logits.sizes(), (at::IntArrayRef{2, len, config_.vocab_size}));
  const int64_t bs = config_.block_size;
  for (int64_t b = 0; b < 2; ++b) {
    at::Tensor ref = reference_logits(*lm_, tokens[b], iota(len),
                                      [&](int64_t i, int64_t j) { return j / bs <= i / bs; });
    EXPECT_LT(max_diff(logits[b], ref), kTol);
    EXPECT_GT(ref.abs().max().item<double>(), 0.5);  // the comparison is not of near-zeros
  }
}

TEST_F(Qwen3Test, CausalMaskThroughGenericForwardMatchesReference) {
  const int64_t len = 9;
  at::Tensor tokens = random_tokens(1, len, config_);
  at::Tensor causal = at::ones({len, len}, at::kBool).tril().view({1, 1, len, len});
  at::Tensor positions = at::arange(len, at::kLong);
  at::Tensor logits = lm_->forward(tokens, positions, causal);
  at::Tensor ref =
      reference_logits(*lm_, tokens[0], iota(len), [](int64_t i, int64_t j) { return j <= i; });
  EXPECT_LT(max_diff(logits[0], ref), kTol);
  // Block-causal differs from causal wherever a block has a later token: the mask matters.
  EXPECT_GT(max_diff(lm_->forward_block_causal(tokens)[0], ref), 1e-3);
}

TEST_F(Qwen3Test, RopeUsesAbsolutePositions) {
  // The same tokens at shifted positions give different logits (RoPE is applied), while a
  // sequence whose attention only spans one position is position-independent.
  at::Tensor tokens = random_tokens(1, 4, config_);
  at::Tensor mask = block_causal_mask(4, 4, at::kCPU);
  at::Tensor a = lm_->forward(tokens, at::arange(4, at::kLong), mask);
  at::Tensor b = lm_->forward(tokens, at::arange(4, at::kLong) + 5, mask);
  EXPECT_LT(max_diff(a, b), kTol * 10);  // relative rotation only: same scores
  at::Tensor c = lm_->forward(tokens, at::tensor({0, 2, 1, 3}, at::kLong), mask);
  EXPECT_GT(max_diff(a, c), 1e-3);
  at::Tensor ref =
      reference_logits(*lm_, tokens[0], {0, 2, 1, 3}, [](int64_t, int64_t) { return true; });
  EXPECT_LT(max_diff(c[0], ref), kTol);
}

TEST_F(Qwen3Test, LaterBlocksDoNotChangeEarlierLogits) {
  at::Tensor tokens = random_tokens(1, 12, config_);
  at::Tensor base = lm_->forward_block_causal(tokens);
  at::Tensor changed = tokens.clone();
  changed[0][9] = (changed[0][9].item<int64_t>() + 1) % config_.vocab_size;  // block 2
  at::Tensor after = lm_->forward_block_causal(changed);
  EXPECT_LT(max_diff(base.narrow(1, 0, 8), after.narrow(1, 0, 8)), 1e-6);
  // ...but every position of its own block sees it, including earlier ones (not causal).
  EXPECT_GT(max_diff(base.narrow(1, 8, 1), after.narrow(1, 8, 1)), 1e-4);
}

TEST_F(Qwen3Test, CachedDecodeMatchesBlockCausal) {
  const int64_t total = 20, bs = config_.block_size;
  at::Tensor tokens = random_tokens(3, total, config_);
  at::Tensor full = lm_->forward_block_causal(tokens);
  const std::vector<int64_t> prompt = {8, 0, 12};  // whole blocks, different per row

  KvCache cache(config_, 3, 32, at::kFloat);
  at::Tensor prefill = lm_->forward_cached(tokens.narrow(1, 0, 12), prompt, cache, true);
  EXPECT_EQ(cache.lengths(), prompt);
  for (int64_t b = 0; b < 3; ++b) {
    if (prompt[b] == 0) continue;
    EXPECT_LT(max_diff(prefill[b].narrow(0, 0, prompt[b]), full[b].narrow(0, 0, prompt[b])), kTol)
        << "prefill row " << b;
  }

  for (int step = 0; step < 2; ++step) {
    std::vector<at::Tensor> rows;
    for (int64_t b = 0; b < 3; ++b) rows.push_back(tokens[b].narrow(0, cache.lengths()[b], bs));
    at::Tensor block = at::stack(rows);
    const std::vector<int64_t> before = cache.lengths();

    // A block with masks in it, not stored: matches block-causal over the same tokens.
    at::Tensor noisy = block.clone();
    noisy.select(1, 1).fill_(config_.mask_token_id);
    at::Tensor noisy_logits = lm_->forward_cached(noisy, {bs, bs, bs}, cache, false);
    EXPECT_EQ(cache.lengths(), before);
    for (int64_t b = 0; b < 3; ++b) {
      at::Tensor seq = tokens[b].narrow(0, 0, before[b] + bs).clone();
      seq.narrow(0, before[b], bs).copy_(noisy[b]);
      at::Tensor ref = lm_->forward_block_causal(seq.unsqueeze(0))[0].narrow(0, before[b], bs);
      EXPECT_LT(max_diff(noisy_logits[b], ref), kTol) << "noisy row " << b << " step " << step;
    }

    // The real block, stored: matches, and the cache grows by one block.
    at::Tensor logits = lm_->forward_cached(block, {bs, bs, bs}, cache, true);
    for (int64_t b = 0; b < 3; ++b) {
      EXPECT_LT(max_diff(logits[b], full[b].narrow(0, before[b], bs)), kTol)
          << "row " << b << " step " << step;
      EXPECT_EQ(cache.lengths()[b], before[b] + bs);
    }
  }
}

// The sampler's forward: rows in different phases (a 2-block chunk, a 1-block chunk, an idle row,
// a row whose chunk starts a new sequence) through one layout, padded and packed. Both match
// forward_cached row by row, and only the stored part stays once the caller sets the lengths.
TEST_F(Qwen3Test, PackedChunkMatchesPaddedChunk) {
  const int64_t bs = config_.block_size, chunk = 2 * bs;
  at::Tensor tokens = random_tokens(4, 24, config_);
  at::Tensor full = lm_->forward_block_causal(tokens);
  const std::vector<int64_t> prompt = {8, 4, 12, 0};
  const std::vector<int64_t> valid = {chunk, bs, 0, chunk};
  auto prefilled = [&] {
    KvCache cache(config_, 4, 32, at::kFloat);
    lm_->prefill(tokens.narrow(1, 0, 12), prompt, cache);
    return cache;
  };
  // Row b's chunk: its tokens from position prompt[b] on (padding beyond valid[b]: the mask id).
  at::Tensor grid = at::full({4, chunk}, config_.mask_token_id, at::kLong);
  std::vector<at::Tensor> real;
  for (int64_t b = 0; b < 4; ++b) {
    if (valid[b] == 0) continue;
    at::Tensor row = tokens[b].narrow(0, prompt[b], valid[b]);
    grid[b].narrow(0, 0, valid[b]).copy_(row);
    real.push_back(row);
  }
  KvCache padded_cache = prefilled();
  CachedChunkLayout padded = lm_->chunk_layout(padded_cache, valid, chunk, false, at::kCPU);
  EXPECT_EQ(padded.tokens, 4 * chunk);
  EXPECT_FALSE(padded.grid_index.defined());
  at::Tensor padded_hidden = lm_->hidden_chunk(grid, padded, padded_cache);
  ASSERT_EQ(padded_hidden.sizes(), (at::IntArrayRef{4, chunk, config_.hidden_size}));
  EXPECT_EQ(padded_cache.lengths(), prompt);  // hidden_chunk leaves the lengths alone

  KvCache packed_cache = prefilled();
  CachedChunkLayout packed = lm_->chunk_layout(packed_cache, valid, chunk, true, at::kCPU);
  EXPECT_EQ(packed.tokens, chunk + bs + 0 + chunk);
  at::Tensor packed_hidden = lm_->hidden_chunk(at::cat(real), packed, packed_cache);
  ASSERT_EQ(packed_hidden.sizes(), (at::IntArrayRef{packed.tokens, config_.hidden_size}));

  at::Tensor padded_logits = lm_->logits(padded_hidden);
  at::Tensor packed_logits = lm_->logits(packed_hidden);
  int64_t at_token = 0;
  for (int64_t b = 0; b < 4; ++b) {
    if (valid[b] == 0) continue;
    at::Tensor want = full[b].narrow(0, prompt[b], valid[b]);
    EXPECT_LT(max_diff(padded_logits[b].narrow(0, 0, valid[b]), want), kTol) << "padded row " << b;
    EXPECT_LT(max_diff(packed_logits.narrow(0, at_token, valid[b]), want), kTol)
        << "packed row " << b;
    at_token += valid[b];
  }

  // Keep the first block of rows 0 and 3 (a commit), then decode the next block of each against
  // both caches: the same logits, and those of the full sequence.
  for (KvCache* cache : {&padded_cache, &packed_cache}) {
    cache->set_length(0, prompt[0] + bs);
    cache->set_length(3, prompt[3] + bs);
  }
  const std::vector<int64_t> next_valid = {bs, bs, 0, bs};
  std::vector<at::Tensor> next_rows;
  for (int64_t b = 0; b < 4; ++b) {
    next_rows.push_back(tokens[b].narrow(0, padded_cache.lengths()[b], bs));
  }
  at::Tensor next_grid = at::stack(next_rows);
  at::Tensor a = lm_->logits(lm_->hidden_chunk(
      next_grid, lm_->chunk_layout(padded_cache, next_valid, bs, false, at::kCPU), padded_cache));
  at::Tensor next_real = at::cat({next_rows[0], next_rows[1], next_rows[3]});
  at::Tensor p = lm_->logits(lm_->hidden_chunk(
      next_real, lm_->chunk_layout(packed_cache, next_valid, bs, true, at::kCPU), packed_cache));
  const int64_t place[] = {0, 1, -1, 2};
  for (int64_t b : {0, 1, 3}) {
    at::Tensor want = full[b].narrow(0, padded_cache.lengths()[b], bs);
    EXPECT_LT(max_diff(a[b], want), kTol) << "next block, padded row " << b;
    EXPECT_LT(max_diff(p.narrow(0, place[b] * bs, bs), want), kTol) << "next block, packed " << b;
  }

  // A layout that does not fit the tokens is refused.
  EXPECT_THROW(
      lm_->hidden_chunk(next_grid, lm_->chunk_layout(packed_cache, next_valid, bs, true, at::kCPU),
                        packed_cache),
      c10::Error);
}

// Key slots rounded up (the sampler's CUDA-graph shapes): a multiple of the rounding, at most the
// capacity, and the extra slots are masked: the same hidden states as the exact layout.
TEST_F(Qwen3Test, RoundedKeySlotsChangeNothingButTheShape) {
  const int64_t bs = config_.block_size;
  at::Tensor tokens = random_tokens(3, 16, config_);
  KvCache cache(config_, 3, 24, at::kFloat);
  lm_->prefill(tokens.narrow(1, 0, 8), {8, 4, 0}, cache);
  const std::vector<int64_t> valid = {bs, bs, 0};
  at::Tensor grid = at::stack({tokens[0].narrow(0, 8, bs), tokens[1].narrow(0, 4, bs),
                               at::full({bs}, config_.mask_token_id, at::kLong)});
  CachedChunkLayout exact = lm_->chunk_layout(cache, valid, bs, false, at::kCPU);
  CachedChunkLayout rounded = lm_->chunk_layout(cache, valid, bs, false, at::kCPU, 10);
  CachedChunkLayout capped = lm_->chunk_layout(cache, valid, bs, false, at::kCPU, 1000);
  EXPECT_EQ(exact.key_slots, 8 + bs);
  EXPECT_EQ(rounded.key_slots, 20);  // 12 rounded up to a multiple of 10
  EXPECT_EQ(capped.key_slots, 24);   // never past the capacity
  EXPECT_EQ(rounded.mask.size(-1), 20);
  at::Tensor want = lm_->hidden_chunk(grid, exact, cache);
  EXPECT_LT(max_diff(lm_->hidden_chunk(grid, rounded, cache), want), kTol);
  EXPECT_LT(max_diff(lm_->hidden_chunk(grid, capped, cache), want), kTol);
}

TEST_F(Qwen3Test, TrainingLayoutMatchesBlockCausalViews) {
  const int64_t len = 12, bs = config_.block_size;
  at::Tensor x0 = random_tokens(1, len, config_);
  at::Tensor xt = x0.clone();
  for (int64_t i : {1, 2, 5, 8, 9, 10, 11}) xt[0][i] = config_.mask_token_id;

  at::Tensor both = lm_->forward(at::cat({xt, x0}, 1), training_positions(len, at::kCPU),
                                 training_mask(len, bs, at::kCPU));
  // x_0's half is exactly block-causal over x_0: it never sees x_t.
  EXPECT_LT(max_diff(both.narrow(1, len, len), lm_->forward_block_causal(x0)), kTol);
  // x_t's block k sees x_0's blocks before k and itself, at the same positions: block-causal over
  // [x_0 blocks < k, x_t block k] gives it, as does decoding x_t block k against a cache of x_0.
  for (int64_t k = 0; k < len / bs; ++k) {
    at::Tensor seq = at::cat({x0.narrow(1, 0, k * bs), xt.narrow(1, k * bs, bs)}, 1);
    at::Tensor ref = lm_->forward_block_causal(seq).narrow(1, k * bs, bs);
    EXPECT_LT(max_diff(both.narrow(1, k * bs, bs), ref), kTol) << "block " << k;

    KvCache cache(config_, 1, len, at::kFloat);
    if (k > 0) lm_->prefill(x0.narrow(1, 0, k * bs), {k * bs}, cache);
    at::Tensor decoded = lm_->forward_cached(xt.narrow(1, k * bs, bs), {bs}, cache, false);
    EXPECT_LT(max_diff(decoded, ref), kTol) << "decoded block " << k;
  }
  EXPECT_LT(max_diff(lm_->forward_training(xt, x0), both.narrow(1, 0, len)), 1e-6);
}

TEST_F(Qwen3Test, ReducedPrecisionStaysCloseToFloat32) {
  at::Tensor tokens = random_tokens(2, 8, config_);
  at::Tensor ref = lm_->forward_block_causal(tokens);
  Qwen3LM copy = random_lm(config_, 7);
  copy->to(at::kBFloat16);
  at::Tensor out = copy->forward_block_causal(tokens);
  EXPECT_EQ(out.scalar_type(), at::kBFloat16);
  const double scale = ref.abs().max().item<double>();
  EXPECT_LT(max_diff(out.to(at::kFloat), ref) / scale, 0.1);
  // Cached decoding in bf16 agrees with bf16 block-causal to bf16 precision.
  KvCache cache(config_, 2, 8, at::kBFloat16);
  (void)copy->forward_cached(tokens.narrow(1, 0, 4), {4, 4}, cache, true);
  at::Tensor decoded = copy->forward_cached(tokens.narrow(1, 4, 4), {4, 4}, cache, false);
  EXPECT_LT(max_diff(decoded.to(at::kFloat), out.narrow(1, 4, 4).to(at::kFloat)) / scale, 0.05);
}

TEST_F(Qwen3Test, TiedEmbeddingsShareOneTensor) {
  ModelConfig tied = config_;
  tied.tie_word_embeddings = true;
  Qwen3LM lm(tied);
  EXPECT_TRUE(lm->lm_head.is_same(lm->model->embed_tokens));
  lm->model->embed_tokens.mul_(2.0);
  EXPECT_TRUE(at::equal(lm->lm_head, lm->model->embed_tokens));
  // One parameter, not two: the untied model has exactly one more.
  Qwen3LM untied(config_);
  EXPECT_EQ(lm->parameters().size() + 1, untied->parameters().size());
}

}  // namespace
}  // namespace dice
