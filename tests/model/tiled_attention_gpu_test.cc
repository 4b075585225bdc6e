// Attention in query tiles (model/tiled_attention.h) on a GPU: with LibTorch's fused SDPA kernels
// fed each tile's cut mask and gathered keys, bf16 outputs and gradients agree with the float32
// math path over the whole mask, for a view layout of 512 tokens with grouped-query heads.
// Skips without a CUDA device.
#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <torch/csrc/autograd/autograd.h>

#include <cmath>
#include <string>
#include <vector>

#include "model/attention_masks.h"
#include "model/tiled_attention.h"
#include "model/torch_compat.h"

namespace dice {
namespace {

// max |a - b| relative to max |b|: keys seen by many queries gather large gradients, so an
// absolute bound would be loose for some tensors and tight for others.
double relative_error(const at::Tensor& a, const at::Tensor& b) {
  const at::Tensor exact = b.to(at::kFloat);
  return a.to(at::kFloat).sub(exact).abs().max().item<double>() / exact.abs().max().item<double>();
}

TEST(TiledAttentionGpuTest, Bf16TilesAgreeWithTheFloat32MathOverTheWholeMask) {
  if (!compat::cuda_available()) {
    GTEST_SKIP() << "needs a CUDA GPU: " << compat::describe_torch();
  }
  const at::Device cuda(at::kCUDA, 0);
  at::manual_seed(8);
  const int64_t length = 512;
  const at::Tensor mask = training_views_mask(length, 4, cuda);  // [1, 1, L, 2L]
  const auto bf16 = at::TensorOptions().dtype(at::kBFloat16).device(cuda);
  // 3 views, 16 query heads over 8 key/value heads of 128: the SDAR head layout.
  const at::Tensor q = at::randn({3, 16, length, 128}, bf16).requires_grad_();
  const at::Tensor k = at::randn({3, 8, 2 * length, 128}, bf16).requires_grad_();
  const at::Tensor v = at::randn({3, 8, 2 * length, 128}, bf16).requires_grad_();
  const at::Tensor grad_out = at::randn({3, 16, length, 128}, bf16);

  const at::Tensor exact = compat::attention_math(q.to(at::kFloat), k.to(at::kFloat),
                                                  v.to(at::kFloat), mask, 1.0 / std::sqrt(128.0));
  const std::vector<at::Tensor> exact_grads =
      torch::autograd::grad({exact}, {q, k, v}, {grad_out.to(at::kFloat)});
  for (int64_t tile : {64, 256}) {
    SCOPED_TRACE("tile " + std::to_string(tile));
    const TiledAttention plan = TiledAttention::plan(mask, tile);
    const at::Tensor tiled = plan.attend(q, {{k, {}}}, {{v, {}}}, 1.0 / std::sqrt(128.0));
    ASSERT_EQ(tiled.scalar_type(), at::kBFloat16);
    EXPECT_LT(relative_error(tiled, exact), 2e-2) << compat::describe_torch();
    const std::vector<at::Tensor> grads = torch::autograd::grad({tiled}, {q, k, v}, {grad_out});
    for (std::size_t i = 0; i < grads.size(); ++i) {
      EXPECT_LT(relative_error(grads[i], exact_grads[i]), 2e-2) << "input " << i;
    }
  }
}

}  // namespace
}  // namespace dice
