// tools/bench/profile/kernel_profile.h on a GPU: a matmul run between start() and stop() shows as
// a gemm kernel with its launches and time, a host-to-device copy as memcpy HtoD, and the
// profile refuses a second start. Skips without a CUDA device.
#include "tools/bench/profile/kernel_profile.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "model/torch_compat.h"

namespace dice::bench {
namespace {

TEST(KernelProfileGpuTest, RecordsTheKernelsAndCopiesBetweenStartAndStop) {
  if (!compat::cuda_available()) {
    GTEST_SKIP() << "needs a CUDA GPU: " << compat::describe_torch();
  }
  const auto cuda = at::TensorOptions().dtype(at::kFloat).device(at::kCUDA, 0);
  at::Tensor a = at::randn({512, 512}, cuda);
  (void)at::matmul(a, a);  // cuBLAS's handle and workspace before the profile
  compat::synchronize(a.device());

  ASSERT_TRUE(KernelProfile::start().ok());
  EXPECT_FALSE(KernelProfile::start().ok()) << "a second profile while one runs";
  at::Tensor host = at::ones({1 << 20});
  at::Tensor b = host.to(a.device());
  for (int i = 0; i < 3; ++i) a = at::matmul(a, a).div_(512.0);
  (void)b.sum();
  compat::synchronize(a.device());
  Result<std::vector<KernelTotal>> totals = KernelProfile::stop();
  ASSERT_TRUE(totals.ok()) << totals.status().to_string();

  int64_t gemm_launches = 0, copies = 0;
  double gemm_seconds = 0;
  for (const KernelTotal& t : *totals) {
    if (t.category == "gemm") {
      gemm_launches += t.count;
      gemm_seconds += t.seconds;
    }
    if (t.name == "memcpy HtoD") copies += t.count;
  }
  EXPECT_GE(gemm_launches, 3) << kernel_table(*totals, 1.0, 10);
  EXPECT_GT(gemm_seconds, 0.0);
  EXPECT_GE(copies, 1) << kernel_table(*totals, 1.0, 10);
  EXPECT_FALSE(KernelProfile::stop().ok()) << "stop() without a running profile";
}

}  // namespace
}  // namespace dice::bench
