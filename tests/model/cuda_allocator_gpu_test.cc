// LibTorch's CUDA caching allocator as the learner releases it between stages
// (model/cuda_allocator.h), on a real GPU: a freed block stays reserved until the release, and
// the driver sees the memory free again afterwards (what the rollout and reward beside the
// learner need).
#include "model/cuda_allocator.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include "model/device_memory.h"
#include "model/torch_compat.h"

namespace dice {
namespace {

constexpr std::uint64_t kBlock = 1ull << 30;  // 1 GiB: far above the allocator's small pools

TEST(CudaAllocatorGpuTest, AFreedBlockIsHeldUntilReleased) {
  if (!compat::cuda_available()) {
    GTEST_SKIP() << "needs a CUDA GPU: " << compat::describe_torch();
  }
  {
    const at::Tensor block =
        at::empty({static_cast<std::int64_t>(kBlock)},
                  at::TensorOptions().dtype(at::kByte).device(at::Device(at::kCUDA, 0)));
    const CachedDeviceMemory in_use = cached_device_memory(0);
    if (!in_use.known) GTEST_SKIP() << "this LibTorch has no CUDA caching allocator to read";
    EXPECT_GE(in_use.allocated, kBlock);
    EXPECT_GE(in_use.peak_allocated, kBlock);
  }
  const CachedDeviceMemory cached = cached_device_memory(0);
  EXPECT_GE(cached.reserved, kBlock) << "the freed block is kept for reuse";
  auto driver_before = cuda_device_memory(0);
  ASSERT_TRUE(driver_before.ok()) << driver_before.status().to_string();

  release_cached_device_memory();
  const CachedDeviceMemory released = cached_device_memory(0);
  EXPECT_LE(released.reserved + kBlock, cached.reserved);
  auto driver_after = cuda_device_memory(0);
  ASSERT_TRUE(driver_after.ok()) << driver_after.status().to_string();
  EXPECT_GE(driver_after->free_bytes + (64ull << 20), driver_before->free_bytes + kBlock);

  reset_peak_device_memory(0);
  EXPECT_LT(cached_device_memory(0).peak_allocated, kBlock);
}

}  // namespace
}  // namespace dice
