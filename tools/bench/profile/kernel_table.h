// What a span of GPU work spent its time on, by kernel class: the table tools/bench prints from a
// kernel profile (kernel_profile.h). Pure string work, no CUDA: unit-tested on any machine.
//
// Classes, by the kernel's name (first match wins; CUPTI gives the mangled name, demangled here):
//   attention    fmha, flash, attention, sdpa          (SDPA's fused kernels, cuDNN's too)
//   gemm         gemm, cutlass, cublas, nvjet, xmma    (the weights' matmuls)
//   norm         norm                                  (RMSNorm, layer norm)
//   softmax      softmax                               (the log-softmax of the lm_head, sampling)
//   reduce       reduce                                (sums, max, any/all)
//   optimizer    adam, multi_tensor                    (AdamW's fused steps)
//   copy/index   index, gather, scatter, cat, copy     (gathers, concatenation, dtype casts)
//   elementwise  elementwise, vectorized, unrolled     (everything pointwise)
//   other        anything else
// plus memcpy and memset for the copy engine's records.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace dice::bench {

// One kernel name's (or copy kind's) total over the profiled span.
struct KernelTotal {
  std::string name;      // demangled, or "memcpy HtoD" / "memset" for copies
  std::string category;  // kernel_category(name), or "memcpy" / "memset"
  int64_t count = 0;
  double seconds = 0;  // summed durations (start to end on the GPU)
};

// The class of a kernel by its (demangled) name, as listed above.
std::string kernel_category(const std::string& name);

// A C++ symbol demangled ("at::native::..."); the input as it is where it is not one.
std::string demangle(const char* mangled);

// The table: GPU time per class (count, ms, share of the kernels' time) and the `top` kernels,
// then the kernels' summed time against `wall_seconds` (one stream: the rest is the host's time
// between kernels, launches and syncs). Totals in any order; largest first in the table.
std::string kernel_table(std::vector<KernelTotal> totals, double wall_seconds, int top);

}  // namespace dice::bench
