// tools/bench/profile/kernel_table.h: kernel names sorted into classes, demangling, and the table
// a bench prints from a kernel profile.
#include "tools/bench/profile/kernel_table.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace dice::bench {
namespace {

TEST(KernelTableTest, NamesFallIntoTheirClasses) {
  // Names as LibTorch 2.x and CUDA 13's libraries launch them on an H200.
  EXPECT_EQ(kernel_category("fmha_cutlassF_bf16_aligned_64x64_rf_sm80(PyTorchMemEffAttention::"
                            "AttentionKernel<cutlass::bfloat16_t>::Params)"),
            "attention");  // cutlass inside, attention first
  EXPECT_EQ(kernel_category("void pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits>"),
            "attention");
  EXPECT_EQ(kernel_category("cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16"),
            "attention");
  EXPECT_EQ(kernel_category("nvjet_tst_192x192_64x3_2x1_v_bz_coopB_TNT"), "gemm");
  EXPECT_EQ(kernel_category("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64"), "gemm");
  EXPECT_EQ(kernel_category("void at::native::(anonymous namespace)::cunn_SoftMaxForward<4>"),
            "softmax");
  EXPECT_EQ(kernel_category("void at::native::reduce_kernel<512, 1, ReduceOp<float, MeanOps>>"),
            "reduce");
  EXPECT_EQ(kernel_category("void at::native::multi_tensor_apply_kernel<FusedAdamMathFunctor>"),
            "optimizer");
  EXPECT_EQ(kernel_category("void at::native::indexSelectLargeIndex<c10::BFloat16, long>"),
            "copy/index");
  EXPECT_EQ(kernel_category("void at::native::(anonymous namespace)::CatArrayBatchedCopy<...>"),
            "copy/index");
  EXPECT_EQ(kernel_category("void at::native::vectorized_elementwise_kernel<4, "
                            "at::native::CUDAFunctor_add<c10::BFloat16>>"),
            "elementwise");
  EXPECT_EQ(kernel_category("my_candidate_kernel"), "other");
}

TEST(KernelTableTest, DemanglesSymbolsAndLeavesOtherNamesAlone) {
  EXPECT_EQ(demangle("_ZN4dice5bench4testEv"), "dice::bench::test()");
  EXPECT_EQ(demangle("nvjet_tst_192x192"), "nvjet_tst_192x192");
  EXPECT_EQ(demangle(nullptr), "?");
}

TEST(KernelTableTest, TableSumsClassesRanksKernelsAndComparesWithTheWallTime) {
  const std::vector<KernelTotal> totals = {
      {"void at::native::vectorized_elementwise_kernel<4>", "elementwise", 300, 0.010},
      {"nvjet_tst_192x192", "gemm", 100, 0.060},
      {"fmha_cutlassF_bf16", "attention", 20, 0.020},
      {"sm90_xmma_gemm_bf16", "gemm", 50, 0.010},
  };
  const std::string table = kernel_table(totals, /*wall_seconds=*/0.200, /*top=*/2);
  // Classes: gemm 70 ms of 100 (two kernels, 150 launches) first.
  EXPECT_NE(table.find("gemm               150       70.00   70.0%"), std::string::npos) << table;
  EXPECT_NE(table.find("attention           20       20.00   20.0%"), std::string::npos) << table;
  EXPECT_LT(table.find("gemm  "), table.find("attention  ")) << table;
  // The two largest kernels, largest first; the third is left out.
  EXPECT_NE(table.find("60.0%     60.00 ms     100 x  gemm        nvjet_tst_192x192"),
            std::string::npos)
      << table;
  EXPECT_NE(table.find("fmha_cutlassF_bf16"), std::string::npos) << table;
  EXPECT_EQ(table.find("sm90_xmma_gemm_bf16\n"), std::string::npos) << table;
  EXPECT_NE(table.find("100.00 ms of 200.00 ms wall: 50.0%"), std::string::npos) << table;
}

TEST(KernelTableTest, AnEmptyProfileSaysSoWithoutDividingByZero) {
  const std::string table = kernel_table({}, 0.0, 5);
  EXPECT_NE(table.find("0.00 ms of 0.00 ms wall: 0.0%"), std::string::npos) << table;
}

}  // namespace
}  // namespace dice::bench
