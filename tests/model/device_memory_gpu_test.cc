// A CUDA device's memory from the driver (model/device_memory.h), on a real GPU: sensible totals,
// and LibTorch's own allocations seen as used (the query runs in the context LibTorch uses).
#include "model/device_memory.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include "model/torch_compat.h"

namespace dice {
namespace {

TEST(DeviceMemoryGpuTest, ALibTorchAllocationShowsAsUsed) {
  if (!compat::cuda_available()) {
    GTEST_SKIP() << "needs a CUDA GPU: " << compat::describe_torch();
  }
  auto before = cuda_device_memory(0);
  ASSERT_TRUE(before.ok()) << before.status().to_string();
  EXPECT_GT(before->total_bytes, 1ull << 30);
  EXPECT_LE(before->free_bytes, before->total_bytes);
  // 2 GiB more than the caching allocator holds: it must ask the driver for it.
  const at::Tensor block =
      at::empty({2ll << 30}, at::TensorOptions().dtype(at::kByte).device(at::Device(at::kCUDA, 0)));
  auto after = cuda_device_memory(0);
  ASSERT_TRUE(after.ok()) << after.status().to_string();
  EXPECT_EQ(after->total_bytes, before->total_bytes);
  EXPECT_LE(after->free_bytes + (2ull << 30), before->free_bytes + (64ull << 20));
}

TEST(DeviceMemoryGpuTest, ADeviceThatIsNotThereIsAnError) {
  if (!compat::cuda_available()) {
    GTEST_SKIP() << "needs a CUDA GPU: " << compat::describe_torch();
  }
  auto missing = cuda_device_memory(compat::cuda_device_count() + 7);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().to_string().find("cuDeviceGet"), std::string::npos);
}

}  // namespace
}  // namespace dice
