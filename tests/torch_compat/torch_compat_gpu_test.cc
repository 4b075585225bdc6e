// GPU tests of model/torch_compat.h: on CUDA, scaled_dot_product_attention (SDPA's fused
// kernels on LibTorch >= 2.1) must agree with the float32 math path, in fp32 and bf16, with the
// block-causal mask of block diffusion and with grouped-query heads. Skips without a CUDA device.
#include "model/torch_compat.h"

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/ops/allclose.h>
#include <ATen/ops/arange.h>
#include <ATen/ops/randn.h>
#include <gtest/gtest.h>

namespace dice {
namespace {

// Calls are qualified on purpose: unqualified, argument-dependent lookup would also find
// at::scaled_dot_product_attention on LibTorch 2.x and the call would be ambiguous.
using compat::attention_math;
using compat::cuda_available;
using compat::cuda_bf16_supported;
using compat::cuda_device_count;
using compat::describe_torch;

#define DICE_SKIP_WITHOUT_CUDA()                                                              \
  if (!cuda_available()) {                                                                    \
    GTEST_SKIP() << "no CUDA device visible to " << describe_torch() << ": GPU test skipped"; \
  }

at::Tensor block_causal_mask(int64_t length, int64_t block, const at::Device& device) {
  const at::Tensor block_of =
      at::arange(length, at::TensorOptions().dtype(at::kLong).device(device)).div(block, "floor");
  return block_of.unsqueeze(1).ge(block_of.unsqueeze(0));
}

struct Case {
  at::ScalarType dtype;
  int64_t heads;
  int64_t kv_heads;
  double tolerance;  // atol = rtol
};

void expect_sdpa_matches_math(const Case& c) {
  // Inputs drawn on the CPU from a seeded generator, then copied: the same on every device.
  at::Generator gen = at::make_generator<at::CPUGeneratorImpl>(42);
  const at::Device device(at::kCUDA, 0);
  const auto options = at::TensorOptions().dtype(c.dtype).device(device);
  const int64_t batch = 2, length = 128, dim = 128;  // Qwen3's head dim; block size 4
  const at::Tensor q = at::randn({batch, c.heads, length, dim}, gen).to(options);
  const at::Tensor k = at::randn({batch, c.kv_heads, length, dim}, gen).to(options);
  const at::Tensor v = at::randn({batch, c.kv_heads, length, dim}, gen).to(options);
  const at::Tensor mask = block_causal_mask(length, 4, device);
  const at::Tensor fast = compat::scaled_dot_product_attention(q, k, v, mask);
  const at::Tensor exact = attention_math(q, k, v, mask);
  ASSERT_EQ(fast.scalar_type(), c.dtype);
  ASSERT_EQ(fast.sizes(), exact.sizes());
  const double max_error = fast.to(at::kFloat).sub(exact.to(at::kFloat)).abs().max().item<double>();
  EXPECT_TRUE(at::allclose(fast.to(at::kFloat), exact.to(at::kFloat), c.tolerance, c.tolerance))
      << "dtype " << c.dtype << " heads " << c.heads << "/" << c.kv_heads
      << ": max |sdpa - math| = " << max_error << " (" << describe_torch() << ")";
}

TEST(TorchCompatGpuTest, SdpaMatchesMathFloat32) {
  DICE_SKIP_WITHOUT_CUDA();
  // fp32 SDPA (memory-efficient or math kernels) differs from the reference only by summation
  // order.
  expect_sdpa_matches_math({at::kFloat, 8, 8, 1e-4});
}

TEST(TorchCompatGpuTest, SdpaMatchesMathBfloat16) {
  DICE_SKIP_WITHOUT_CUDA();
  if (!cuda_bf16_supported()) GTEST_SKIP() << "device 0 runs no bf16 matmul";
  // bf16 outputs carry 8 mantissa bits (relative step 2^-8 ~ 0.4%); flash attention also rounds
  // the softmax weights to bf16 before the value product. 2e-2 leaves room for both.
  expect_sdpa_matches_math({at::kBFloat16, 8, 8, 2e-2});
}

TEST(TorchCompatGpuTest, SdpaMatchesMathGroupedQueryBfloat16) {
  DICE_SKIP_WITHOUT_CUDA();
  if (!cuda_bf16_supported()) GTEST_SKIP() << "device 0 runs no bf16 matmul";
  // Qwen3-4B's ratio: 32 query heads over 8 key/value heads, here 8 over 2.
  expect_sdpa_matches_math({at::kBFloat16, 8, 2, 2e-2});
}

TEST(TorchCompatGpuTest, AttentionTurnsSdpaCudnnBackendOff) {
  DICE_SKIP_WITHOUT_CUDA();
  // The cuDNN backend plans per shape (hundreds of ms each); dice's shapes vary every step
  // (2026-12-05; docs/BENCHMARKS.md, "SFT ten times slower when shapes vary"). After dice's first
  // attention SDPA may no longer pick it.
  expect_sdpa_matches_math({at::kFloat, 8, 8, 1e-4});
  EXPECT_FALSE(compat::sdpa_cudnn_enabled()) << describe_torch();
}

TEST(TorchCompatGpuTest, DeviceQueriesAgree) {
  DICE_SKIP_WITHOUT_CUDA();
  EXPECT_GE(cuda_device_count(), 1);
  EXPECT_FALSE(cuda_bf16_supported(cuda_device_count()));  // no such device
  EXPECT_NE(describe_torch().find("CUDA"), std::string::npos) << describe_torch();
}

}  // namespace
}  // namespace dice
