// Split compilation of a load_inline extension: the kernels go to a .cu file that nvcc compiles
// WITHOUT torch headers (nvcc parses a header three times: cudafe++, cicc and the host compiler,
// and torch's headers were most of every build's CPU time), and the host code that launches them
// joins the binding file, which g++ compiles once with the precompiled torch prelude. Each
// kernel gets a launch stub in the .cu, and the host code's launches call the stub:
//
//   cuda_sources                     kernels.cu (nvcc, no torch)        binding.cpp (g++, PCH)
//   ------------------------------   --------------------------------   ---------------------------
//   #define / #include <cmath>   ->  both (a torch/ATen/c10 include: binding.cpp only)
//   struct, typedef, constexpr   ->  the side(s) whose code names them
//   __device__ helper, variable  ->  kernels.cu
//   __host__ __device__ helper   ->  kernels.cu, and binding.cpp (inline) when host code calls it
//   __global__ void k(P...)      ->  k + void dice_split_launch_k(dim3 g, dim3 b, size_t s,
//                                      cudaStream_t st, P...) { k<<<g, b, s, st>>>(p...); }
//   host function: k<<<g, b>>>(a)->  binding.cpp, after cpp_sources: dice_split_launch_k(g, b,
//                                      0, 0, a) (0, 0: a launch's own defaults)
//
// The stubs have hidden visibility, so a stub the host side declares but the .cu does not define
// (or defines with other parameter types) fails the link instead of the import.
//
// The split only applies where it keeps load_inline's meaning; otherwise split_host_device()
// says why and the caller builds the usual way. It does not apply to: template kernels,
// overloaded kernels, a kernel named other than in a launch (a function pointer,
// cudaFuncSetAttribute) or a __device__/__constant__ variable named by host code
// (cudaMemcpyToSymbol), a launch inside parentheses (a macro argument would split at its
// commas), inside a macro definition, with a "<"/">" or a macro with commas in its
// configuration (the stub's arguments could be miscounted), preprocessor conditionals (#if), a
// directive inside a declaration (other than #pragma), device code that names torch/at/c10
// (other than Half/BFloat16) or a TORCH_/AT_/C10_ macro, namespaces or extern "C" blocks holding
// device code, sources without kernels or launches, cpp_sources whose declarations, macros,
// using-directives or non-standard includes the host code would now see, and flags that would
// reach the host code differently (extra_cflags; extra_cuda_cflags other than device-code
// ones). What it gets wrong past these checks fails to compile or link (the stubs are hidden
// symbols, so a mismatch cannot wait until the import), and the caller then falls back as well.
#pragma once

#include <string>

#include "common/status.h"
#include "reward/compile/binding.h"

namespace dice {

struct SplitSources {
  std::string device_unit;  // the whole .cu: std/CUDA headers, shared and device code, stubs
  std::string host_part;    // CUDA headers, shared and host code; goes after cpp_sources
  int kernels = 0;          // __global__ functions (each with a stub)
  int launches = 0;         // launches rewritten to stub calls
};

// The split of `ext`'s cuda_sources, or kInvalidArgument with why it does not apply.
Result<SplitSources> split_host_device(const ExtensionSources& ext);

}  // namespace dice
