// One place that hides the differences between the two LibTorch versions dice builds against:
//   - Debian 12's libtorch-dev 1.13 (CPU only, no scaled_dot_product_attention): CI and laptops;
//   - PyTorch 2.x wheels (CUDA, SDPA with flash / memory-efficient kernels): the GPU nodes.
// Code outside this header never tests TORCH_VERSION_* itself; it calls dice::compat.
//
// The functions are defined in model/torch_compat.cc (library dice_torch_compat), so
// only that file pays for <ATen/ATen.h>; this header pulls in just the Tensor type.
#pragma once

#include <ATen/core/Tensor.h>
#include <torch/version.h>

#include <optional>
#include <string>

// True when the LibTorch being compiled against is at least major.minor.
#define DICE_TORCH_VERSION_AT_LEAST(major, minor) \
  (TORCH_VERSION_MAJOR > (major) ||               \
   (TORCH_VERSION_MAJOR == (major) && TORCH_VERSION_MINOR >= (minor)))

// at::scaled_dot_product_attention with an explicit `scale` argument appeared in 2.1
// (2.0 had SDPA without `scale`; dice treats 2.0 like 1.13 and uses the math path).
#define DICE_TORCH_HAS_SDPA DICE_TORCH_VERSION_AT_LEAST(2, 1)
// SDPA's `enable_gqa` (fewer key/value heads than query heads) appeared in 2.5.
#define DICE_TORCH_HAS_SDPA_GQA DICE_TORCH_VERSION_AT_LEAST(2, 5)

// c10::Allocator::allocate is const before LibTorch 2.3 and not since: an allocator that wraps
// another (the tests' allocator that refuses large blocks) declares it
// `c10::DataPtr allocate(size_t n) DICE_TORCH_ALLOCATE_CONST override`.
#if DICE_TORCH_VERSION_AT_LEAST(2, 3)
#define DICE_TORCH_ALLOCATE_CONST
#else
#define DICE_TORCH_ALLOCATE_CONST const
#endif

namespace dice::compat {

// Attention over the last two dimensions:
//   q [..., heads, L, E], k [..., kv_heads, S, E], v [..., kv_heads, S, Ev] -> [..., heads, L, Ev]
// heads must be a multiple of kv_heads (grouped-query attention: query head h reads key/value
// head h / (heads / kv_heads), as in Qwen3).
// attn_mask: bool, broadcastable to [..., heads, L, S]; true = the query may attend to the key
//   (SDPA's convention). Every query row must allow at least one key: a row with none has no
//   defined softmax (SDPA and this fallback disagree on it), so callers never build one.
// scale: multiplies q.k; std::nullopt means 1/sqrt(E).
// On LibTorch >= 2.1 this is at::scaled_dot_product_attention (fused kernels on CUDA); on older
// versions it is attention_math(). Call it qualified (dice::compat::...): unqualified, argument-
// dependent lookup also finds at::scaled_dot_product_attention on 2.x and the call is ambiguous.
at::Tensor scaled_dot_product_attention(const at::Tensor& q, const at::Tensor& k,
                                        const at::Tensor& v,
                                        const std::optional<at::Tensor>& attn_mask,
                                        std::optional<double> scale = std::nullopt);

// Turns SDPA's cuDNN backend off for this process, once: it builds a plan for every new shape
// (hundreds of milliseconds each), and dice's shapes change every step. Qwen3Model's constructor
// calls it, before any thread attends; scaled_dot_product_attention above calls it too.
void keep_sdpa_off_cudnn();
// Whether SDPA may pick its cuDNN backend in this process. False where this LibTorch has none.
bool sdpa_cudnn_enabled();

// The same attention written out: softmax(scale * q k^T, masked) v, computed in float32 whatever
// the input dtype (reduced-precision inputs are upcast, the result cast back). Exact reference
// for tests, and the fallback where SDPA is missing.
at::Tensor attention_math(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                          const std::optional<at::Tensor>& attn_mask,
                          std::optional<double> scale = std::nullopt);

// Whether this LibTorch was built with CUDA and sees at least one device (false on Debian's).
bool cuda_available();
// Waits for the work queued on `device` (CUDA); returns at once for the CPU. For timings only.
void synchronize(const c10::Device& device);
// Number of visible CUDA devices; 0 where cuda_available() is false.
int cuda_device_count();
// Whether a bfloat16 matmul runs on CUDA device `device` and gives the exact answer. Checked by
// running one: the CPU-only LibTorch headers cannot query device properties.
bool cuda_bf16_supported(int device = 0);

// "LibTorch 2.11.0 (CUDA, 1 device)" / "LibTorch 1.13.0 (CPU only)": for start-up log lines.
std::string describe_torch();

}  // namespace dice::compat
