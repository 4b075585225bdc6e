// CPU tests of model/torch_compat.h: the math path against attention worked out by hand, masks
// (including the block-causal pattern of block diffusion), grouped-query heads, and bad input.
#include "model/torch_compat.h"

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/ops/allclose.h>
#include <ATen/ops/arange.h>
#include <ATen/ops/equal.h>
#include <ATen/ops/eye.h>
#include <ATen/ops/ones.h>
#include <ATen/ops/randn.h>
#include <ATen/ops/tensor.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

namespace dice {
namespace {

// Calls are qualified on purpose: unqualified, argument-dependent lookup would also find
// at::scaled_dot_product_attention on LibTorch 2.x and the call would be ambiguous.
using compat::attention_math;
using compat::cuda_available;
using compat::cuda_bf16_supported;
using compat::cuda_device_count;
using compat::describe_torch;

// Seeded CPU generator: reproducible inputs without at::manual_seed (whose header is heavy).
at::Generator seeded(uint64_t seed) {
  return at::make_generator<at::CPUGeneratorImpl>(seed);
}

// [1 head, rows, cols] float tensor from row-major values.
at::Tensor make(const std::vector<float>& values, int64_t rows, int64_t cols) {
  return at::tensor(values, at::kFloat).reshape({1, rows, cols});
}

// mask[i][j] = key j is in query i's block or an earlier one.
at::Tensor block_causal_mask(int64_t length, int64_t block) {
  const at::Tensor block_of = at::arange(length, at::kLong).div(block, "floor");
  return block_of.unsqueeze(1).ge(block_of.unsqueeze(0));
}

// Attention in double precision, one query at a time, written with loops.
std::vector<double> attention_by_loops(const at::Tensor& q, const at::Tensor& k,
                                       const at::Tensor& v, const at::Tensor& mask, double scale) {
  const auto qa = q.to(at::kDouble).contiguous();
  const auto ka = k.to(at::kDouble).contiguous();
  const auto va = v.to(at::kDouble).contiguous();
  const int64_t length = q.size(-2), keys = k.size(-2), dim = q.size(-1), vdim = v.size(-1);
  const double* qp = qa.data_ptr<double>();
  const double* kp = ka.data_ptr<double>();
  const double* vp = va.data_ptr<double>();
  std::vector<double> out(length * vdim, 0.0);
  for (int64_t i = 0; i < length; ++i) {
    std::vector<double> weight(keys, 0.0);
    double max_score = -INFINITY, total = 0.0;
    for (int64_t j = 0; j < keys; ++j) {
      if (!mask[i][j].item<bool>()) continue;
      double dot = 0.0;
      for (int64_t e = 0; e < dim; ++e) dot += qp[i * dim + e] * kp[j * dim + e];
      weight[j] = dot * scale;
      max_score = std::max(max_score, weight[j]);
    }
    for (int64_t j = 0; j < keys; ++j) {
      weight[j] = mask[i][j].item<bool>() ? std::exp(weight[j] - max_score) : 0.0;
      total += weight[j];
    }
    for (int64_t j = 0; j < keys; ++j) {
      for (int64_t e = 0; e < vdim; ++e) out[i * vdim + e] += weight[j] / total * vp[j * vdim + e];
    }
  }
  return out;
}

TEST(TorchCompatTest, MathMatchesHandComputedAttention) {
  // scale 1: query 0 scores keys (0, ln 3) -> weights (1/4, 3/4) -> 1/4*4 + 3/4*8 = 7;
  // query 1 scores (0, 0) -> weights (1/2, 1/2) -> 6.
  const at::Tensor q = make({1, 0}, 2, 1);
  const at::Tensor k = make({0, static_cast<float>(std::log(3.0))}, 2, 1);
  const at::Tensor v = make({4, 8}, 2, 1);
  const at::Tensor out = attention_math(q, k, v, std::nullopt, 1.0);
  ASSERT_EQ(out.sizes(), at::IntArrayRef({1, 2, 1}));
  EXPECT_NEAR(out[0][0][0].item<float>(), 7.0f, 1e-5);
  EXPECT_NEAR(out[0][1][0].item<float>(), 6.0f, 1e-5);
}

TEST(TorchCompatTest, DefaultScaleIsInverseSqrtOfHeadDim) {
  // head dim 4 -> scale 1/2; q.k = 2 ln 3 -> score ln 3 -> weights (1/4, 3/4) -> 7.
  const float ln3 = static_cast<float>(std::log(3.0));
  const at::Tensor q = make({2, 0, 0, 0}, 1, 4);
  const at::Tensor k = make({0, 0, 0, 0, ln3, 0, 0, 0}, 2, 4);
  const at::Tensor v = make({4, 8}, 2, 1);
  EXPECT_NEAR(attention_math(q, k, v, std::nullopt).item<float>(), 7.0f, 1e-5);
  EXPECT_NEAR(compat::scaled_dot_product_attention(q, k, v, std::nullopt).item<float>(), 7.0f,
              1e-5);
}

TEST(TorchCompatTest, MaskTrueMeansAttend) {
  // Same numbers as above, but query 0 may only see key 0 and query 1 only key 1.
  const at::Tensor q = make({1, 0}, 2, 1);
  const at::Tensor k = make({0, static_cast<float>(std::log(3.0))}, 2, 1);
  const at::Tensor v = make({4, 8}, 2, 1);
  const at::Tensor mask = at::eye(2, at::kBool);
  const at::Tensor out = attention_math(q, k, v, mask, 1.0);
  EXPECT_NEAR(out[0][0][0].item<float>(), 4.0f, 1e-6);
  EXPECT_NEAR(out[0][1][0].item<float>(), 8.0f, 1e-6);
}

TEST(TorchCompatTest, BlockCausalMaskMatchesLoops) {
  at::Generator gen = seeded(7);
  const int64_t length = 10, block = 4, dim = 8;
  const at::Tensor q = at::randn({1, length, dim}, gen);
  const at::Tensor k = at::randn({1, length, dim}, gen);
  const at::Tensor v = at::randn({1, length, 3}, gen);
  const at::Tensor mask = block_causal_mask(length, block);
  // Spot-check the pattern: position 5 (block 1) sees 0..7, not 8.
  EXPECT_TRUE(mask[5][7].item<bool>());
  EXPECT_FALSE(mask[5][8].item<bool>());
  EXPECT_TRUE(mask[8][0].item<bool>());

  const double scale = 0.3;
  const std::vector<double> expected = attention_by_loops(q[0], k[0], v[0], mask, scale);
  for (const bool dispatch : {false, true}) {
    const at::Tensor out = dispatch ? compat::scaled_dot_product_attention(q, k, v, mask, scale)
                                    : attention_math(q, k, v, mask, scale);
    const at::Tensor flat = out.reshape({-1}).to(at::kDouble).contiguous();
    ASSERT_EQ(flat.numel(), static_cast<int64_t>(expected.size()));
    for (size_t i = 0; i < expected.size(); ++i) {
      EXPECT_NEAR(flat[i].item<double>(), expected[i], 1e-5) << "element " << i;
    }
  }
}

TEST(TorchCompatTest, BlockCausalOutputIgnoresLaterBlocks) {
  at::Generator gen = seeded(11);
  const int64_t length = 12, block = 4;
  const at::Tensor q = at::randn({2, length, 16}, gen);
  const at::Tensor k = at::randn({2, length, 16}, gen);
  const at::Tensor v = at::randn({2, length, 16}, gen);
  const at::Tensor mask = block_causal_mask(length, block);
  const at::Tensor before = compat::scaled_dot_product_attention(q, k, v, mask);
  // Change keys and values of the last block only: blocks 0 and 1 must not move, block 2 must.
  at::Tensor k2 = k.clone(), v2 = v.clone();
  k2.narrow(1, 8, 4).add_(1.0);
  v2.narrow(1, 8, 4).mul_(-3.0);
  const at::Tensor after = compat::scaled_dot_product_attention(q, k2, v2, mask);
  EXPECT_TRUE(at::equal(before.narrow(1, 0, 8), after.narrow(1, 0, 8)));
  EXPECT_FALSE(at::allclose(before.narrow(1, 8, 4), after.narrow(1, 8, 4)));
}

TEST(TorchCompatTest, GroupedQueryHeadsShareKeyValueHeads) {
  at::Generator gen = seeded(3);
  // 4 query heads over 2 key/value heads: heads 0,1 read kv head 0; heads 2,3 read kv head 1.
  const at::Tensor q = at::randn({2, 4, 6, 8}, gen);
  const at::Tensor k = at::randn({2, 2, 6, 8}, gen);
  const at::Tensor v = at::randn({2, 2, 6, 5}, gen);
  const at::Tensor mask = block_causal_mask(6, 2);
  for (const bool dispatch : {false, true}) {
    const at::Tensor out = dispatch ? compat::scaled_dot_product_attention(q, k, v, mask)
                                    : attention_math(q, k, v, mask);
    ASSERT_EQ(out.sizes(), at::IntArrayRef({2, 4, 6, 5}));
    for (int64_t head = 0; head < 4; ++head) {
      const at::Tensor one = attention_math(q.narrow(1, head, 1), k.narrow(1, head / 2, 1),
                                            v.narrow(1, head / 2, 1), mask);
      EXPECT_TRUE(at::allclose(out.narrow(1, head, 1), one, 1e-5, 1e-6)) << "head " << head;
    }
  }
}

TEST(TorchCompatTest, GroupedQueryHeadsWithEveryMaskShape) {
  // The dispatch runs masked grouped-query attention with each key/value head's queries side by
  // side; every mask shape must reach the queries it did: [T, S], [B, 1, T, S] per sample,
  // [1, 1, 1, S] one row for all, [B, heads, T, S] per head.
  at::Generator gen = seeded(4);
  const at::Tensor q = at::randn({2, 6, 5, 8}, gen);  // 6 query heads over 2: groups of 3
  const at::Tensor k = at::randn({2, 2, 7, 8}, gen);
  const at::Tensor v = at::randn({2, 2, 7, 4}, gen);
  const at::Tensor per_head = at::randn({2, 6, 5, 7}, gen).gt(-0.5);
  per_head.select(-1, 0).fill_(true);  // every query row sees a key
  const std::vector<at::Tensor> masks = {
      block_causal_mask(7, 2).narrow(0, 2, 5),
      at::randn({2, 1, 5, 7}, gen).gt(-0.5).index_fill_(-1, at::tensor({0L}), true),
      at::randn({1, 1, 1, 7}, gen).gt(0.0).index_fill_(-1, at::tensor({3L}), true), per_head};
  for (std::size_t i = 0; i < masks.size(); ++i) {
    const at::Tensor out = compat::scaled_dot_product_attention(q, k, v, masks[i], 0.3);
    const at::Tensor expected = attention_math(q, k, v, masks[i], 0.3);
    ASSERT_EQ(out.sizes(), expected.sizes()) << "mask " << i;
    EXPECT_TRUE(at::allclose(out, expected, 1e-5, 1e-6)) << "mask " << i;
  }
}

TEST(TorchCompatTest, ReducedPrecisionKeepsDtypeAndStaysClose) {
  at::Generator gen = seeded(5);
  const at::Tensor q = at::randn({1, 2, 8, 16}, gen);
  const at::Tensor k = at::randn({1, 2, 8, 16}, gen);
  const at::Tensor v = at::randn({1, 2, 8, 16}, gen);
  const at::Tensor mask = block_causal_mask(8, 4);
  const at::Tensor reference = attention_math(q, k, v, mask);
  const at::Tensor half =
      attention_math(q.to(at::kBFloat16), k.to(at::kBFloat16), v.to(at::kBFloat16), mask);
  EXPECT_EQ(half.scalar_type(), at::kBFloat16);
  // bf16 keeps 8 bits of mantissa: inputs round by ~0.4%, outputs are O(1).
  EXPECT_TRUE(at::allclose(half.to(at::kFloat), reference, 2e-2, 2e-2));
}

TEST(TorchCompatTest, RejectsBadInput) {
  at::Generator gen = seeded(1);
  const at::Tensor q = at::randn({1, 4, 3, 8}, gen);
  const at::Tensor k = at::randn({1, 3, 3, 8}, gen);
  EXPECT_THROW(attention_math(q, k, k, std::nullopt), c10::Error);  // 4 heads over 3
  const at::Tensor k2 = at::randn({1, 4, 3, 8}, gen);
  const at::Tensor float_mask = at::ones({3, 3});
  EXPECT_THROW(attention_math(q, k2, k2, float_mask), c10::Error);
  EXPECT_THROW(compat::scaled_dot_product_attention(q, k2, k2, float_mask), c10::Error);
  EXPECT_THROW(attention_math(q, at::randn({1, 4, 3, 7}, gen), k2, std::nullopt), c10::Error);
}

TEST(TorchCompatTest, VersionMacrosAgreeWithDescription) {
  EXPECT_TRUE(DICE_TORCH_VERSION_AT_LEAST(TORCH_VERSION_MAJOR, TORCH_VERSION_MINOR));
  EXPECT_FALSE(DICE_TORCH_VERSION_AT_LEAST(TORCH_VERSION_MAJOR, TORCH_VERSION_MINOR + 1));
  EXPECT_FALSE(DICE_TORCH_VERSION_AT_LEAST(TORCH_VERSION_MAJOR + 1, 0));
  EXPECT_EQ(static_cast<bool>(DICE_TORCH_HAS_SDPA),
            TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 1));
  const std::string description = describe_torch();
  const std::string version = "LibTorch " + std::to_string(TORCH_VERSION_MAJOR) + "." +
                              std::to_string(TORCH_VERSION_MINOR) + ".";
  EXPECT_EQ(description.rfind(version, 0), 0u) << description;
  EXPECT_NE(description.find(cuda_available() ? "CUDA" : "CPU only"), std::string::npos)
      << description;
  if (!cuda_available()) {
    EXPECT_EQ(cuda_device_count(), 0);
    EXPECT_FALSE(cuda_bf16_supported());
  }
}

}  // namespace
}  // namespace dice
