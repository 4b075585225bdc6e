// The two translation units a candidate's load_inline(...) call stands for, generated without
// running Python: the CUDA file (cuda_sources behind the usual CUDA/torch includes) and the
// binding file (cpp_sources behind <torch/extension.h>, then a PYBIND11_MODULE that exports each
// listed function under its own name). Both are compiled with -DTORCH_EXTENSION_NAME=<name>, so
// the module initialiser is PyInit_<name> and Python can import the .so by that name.
#pragma once

#include <set>
#include <string>
#include <vector>

namespace dice {

struct ExtensionSources {
  std::string name;                            // the load_inline name: a Python identifier
  std::string cpp_sources;                     // declarations (and any host code) from cpp_sources
  std::string cuda_sources;                    // kernels and launchers from cuda_sources
  std::vector<std::string> functions;          // exported names; empty = cpp_sources binds itself
  std::vector<std::string> extra_cuda_cflags;  // already filtered by extract_sources.py
  std::vector<std::string> extra_cflags;
  std::vector<std::string> extra_ldflags;
};

// Which LibTorch headers stand for the sources' #include <torch/extension.h>.
//   kLean: the .cu only (its binding file gets kSlim's): <ATen/core/Tensor.h> (the Tensor class
//          and its methods), <ATen/Dispatch.h>, the per-operator header (ATen/ops/<name>.h) of
//          each at::/torch:: function the source calls, and the CUDA stream headers when it names
//          them. About 40% less compile time than kSlim for a typical kernel (nvcc parses the
//          headers three times: cudafe++, cicc, the host compiler); a source that needs more
//          fails to compile and falls back to kSlim.
//   kSlim: <ATen/ATen.h> with torch:: as an alias of at:: in the .cu (kernels need tensors, not
//          autograd or Python), and <torch/types.h> plus torch's pybind11 casters in the binding.
//          Measured on one kernel: nvcc 7 s instead of 72 s, binding 12 s instead of ~50 s.
//   kFull: <torch/extension.h> as load_inline has it; the compiler falls back to it when a slim
//          build fails, so a source that needs more of torch still builds.
//   kAten: the binding file only (the .cu gets kSlim's): <ATen/ATen.h> and torch's pybind11
//          casters, torch:: as at:: plus torch/types.h's dtype names, without torch/types.h's
//          autograd factories, JIT and operator registration. For split builds, whose host code
//          commonly uses tensors, factories and TORCH_CHECK: g++ redoes the headers' template
//          instantiations in every file even with a precompiled header, and these headers need
//          fewer (dev VM, torch 1.13, item 136 at -O1: ~1.3 of ~6.5 CPU-s per binding, noisy). A
//          binding that needs more fails to compile and is retried with kSlim's headers.
enum class TorchHeaders { kLean, kSlim, kFull, kAten };

// The operators with a per-operator header (ATen/ops/<name>.h) in any of `include_dirs`.
std::set<std::string> per_operator_headers(const std::vector<std::string>& include_dirs);

// The .cu file: cuda_sources after the includes load_inline puts in front of them. kLean picks
// its operator headers from `operators` (per_operator_headers()).
std::string cuda_translation_unit(const ExtensionSources& ext,
                                  TorchHeaders headers = TorchHeaders::kFull,
                                  const std::set<std::string>& operators = {});

// The headers in front of the binding file's cpp_sources (binding_pch.h precompiles them).
std::string binding_prelude(TorchHeaders headers);

// Whether a binding file of `cpp_sources` and `host_part` keeps its meaning with kAten's headers
// instead of kSlim's: false when it includes a torch/ header of its own (besides
// torch/extension.h, which the slim units drop) or uses what torch:: has beyond at:: with a
// different result: torch::tensor (the default dtype, not the values' own) and requires_grad
// (the autograd factories). Other torch-only names fail to compile and are retried with kSlim.
bool aten_binding_applies(const std::string& cpp_sources, const std::string& host_part);

// The .cpp file with the Python bindings. With `prelude_header` (an absolute path to a file
// holding binding_prelude(headers), with a precompiled .gch beside it) the file includes that
// instead of spelling the prelude out. `host_part` (split_sources.h: the kernel file's host code
// in a split build) goes after cpp_sources, before the module definition.
std::string binding_translation_unit(const ExtensionSources& ext,
                                     TorchHeaders headers = TorchHeaders::kFull,
                                     const std::string& prelude_header = "",
                                     const std::string& host_part = "");

}  // namespace dice
