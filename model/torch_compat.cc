// See model/torch_compat.h. The only translation unit of dice_torch_compat. It includes one
// header per ATen operator it calls instead of all of <ATen/ATen.h>, to keep compiles short.
#include "model/torch_compat.h"

#include <ATen/ops/matmul.h>
#include <ATen/ops/ones.h>
#include <ATen/ops/softmax.h>
#include <c10/util/Exception.h>
#include <torch/cuda.h>
#if DICE_TORCH_HAS_SDPA
#include <ATen/Context.h>
#include <ATen/ops/scaled_dot_product_attention.h>
#endif

#include <cmath>
#include <limits>
#include <sstream>
#include <vector>

namespace dice::compat {
namespace {

// Repeats each key/value head so that a grouped-query [.., kv_heads, S, E] tensor lines up with
// [.., heads, S, E] queries.
at::Tensor expand_kv_heads(const at::Tensor& kv, int64_t heads) {
  const int64_t kv_heads = kv.size(-3);
  if (kv_heads == heads) return kv;
  TORCH_CHECK(heads % kv_heads == 0, "dice::compat attention: ", heads,
              " query heads is not a multiple of ", kv_heads, " key/value heads");
  return kv.repeat_interleave(heads / kv_heads, /*dim=*/-3);
}

void check_shapes(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                  const std::optional<at::Tensor>& attn_mask) {
  TORCH_CHECK(q.dim() >= 3 && k.dim() == q.dim() && v.dim() == q.dim(),
              "dice::compat attention: q, k, v need the same rank >= 3 ([..., heads, len, dim]); "
              "got ",
              q.sizes(), ", ", k.sizes(), ", ", v.sizes());
  TORCH_CHECK(q.size(-1) == k.size(-1),
              "dice::compat attention: q and k head dims differ: ", q.size(-1), " vs ", k.size(-1));
  TORCH_CHECK(k.size(-2) == v.size(-2),
              "dice::compat attention: k and v lengths differ: ", k.size(-2), " vs ", v.size(-2));
  if (attn_mask) {
    TORCH_CHECK(attn_mask->scalar_type() == at::kBool,
                "dice::compat attention: attn_mask must be bool (true = attend), got ",
                attn_mask->scalar_type());
  }
}

// Grouped-query attention with a mask, as attention over the key/value heads whose queries are
// their groups' queries side by side: q [..., kv * g, T, E] -> [..., kv, g * T, E], the mask
// likewise, the result back to [..., kv * g, T, Ev]. The rollout's cached layout does this by
// construction; here it keeps masked training attention on SDPA's fused kernels, whose
// memory-efficient one does not take grouped heads in every 2.x release (such calls fell to the
// math kernel, which holds every score), and reads each key/value head as it is, without copies.
template <class Attend>
at::Tensor attend_grouped_as_grid(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                                  const at::Tensor& mask, Attend attend) {
  const int64_t heads = q.size(-3), kv_heads = k.size(-3), len = q.size(-2);
  TORCH_CHECK(heads % kv_heads == 0, "dice::compat attention: ", heads,
              " query heads is not a multiple of ", kv_heads, " key/value heads");
  const int64_t groups = heads / kv_heads;
  std::vector<int64_t> grid(q.sizes().begin(), q.sizes().end());
  grid[grid.size() - 3] = kv_heads;
  grid[grid.size() - 2] = groups * len;
  // The mask at q's rank, one row per query ([..., 1 or heads, T, S]), then as the grid.
  at::Tensor m = mask;
  while (m.dim() < q.dim()) m = m.unsqueeze(0);
  std::vector<int64_t> rows(m.sizes().begin(), m.sizes().end());
  rows[rows.size() - 2] = len;
  m = m.expand(rows);
  std::vector<int64_t> mask_grid = rows;
  mask_grid[mask_grid.size() - 2] = groups * len;
  if (m.size(-3) == 1) {
    std::vector<int64_t> repeated = rows;
    repeated.insert(repeated.end() - 2, groups);  // [..., 1, groups, T, S]
    m = m.unsqueeze(-3).expand(repeated);
  } else {
    mask_grid[mask_grid.size() - 3] = kv_heads;  // per-head masks: [..., kv, groups, T, S]
  }
  at::Tensor out = attend(q.reshape(grid), k, v, m.reshape(mask_grid));
  std::vector<int64_t> back(out.sizes().begin(), out.sizes().end());
  back[back.size() - 3] = heads;
  back[back.size() - 2] = len;
  return out.reshape(back);
}

}  // namespace

at::Tensor attention_math(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                          const std::optional<at::Tensor>& attn_mask, std::optional<double> scale) {
  check_shapes(q, k, v, attn_mask);
  const int64_t heads = q.size(-3);
  const double s = scale ? *scale : 1.0 / std::sqrt(static_cast<double>(q.size(-1)));
  const at::ScalarType wide = c10::promoteTypes(q.scalar_type(), at::kFloat);  // fp32 at least
  const at::Tensor q32 = q.to(wide);
  const at::Tensor k32 = expand_kv_heads(k, heads).to(wide);
  const at::Tensor v32 = expand_kv_heads(v, heads).to(wide);
  at::Tensor scores = at::matmul(q32, k32.transpose(-2, -1)).mul(s);
  if (attn_mask) {
    scores = scores.masked_fill(attn_mask->logical_not(), -std::numeric_limits<float>::infinity());
  }
  return at::matmul(at::softmax(scores, -1), v32).to(q.scalar_type());
}

at::Tensor scaled_dot_product_attention(const at::Tensor& q, const at::Tensor& k,
                                        const at::Tensor& v,
                                        const std::optional<at::Tensor>& attn_mask,
                                        std::optional<double> scale) {
  check_shapes(q, k, v, attn_mask);
  if (attn_mask && k.size(-3) != q.size(-3)) {
    return attend_grouped_as_grid(q, k, v, *attn_mask,
                                  [&](const at::Tensor& gq, const at::Tensor& gk,
                                      const at::Tensor& gv, const at::Tensor& gmask) {
                                    return dice::compat::scaled_dot_product_attention(gq, gk, gv,
                                                                                      gmask, scale);
                                  });
  }
#if DICE_TORCH_HAS_SDPA
  keep_sdpa_off_cudnn();
  c10::optional<at::Tensor> mask;
  if (attn_mask) mask = *attn_mask;
  c10::optional<double> sdpa_scale;
  if (scale) sdpa_scale = *scale;
#if DICE_TORCH_HAS_SDPA_GQA
  const bool gqa = k.size(-3) != q.size(-3);
  return at::scaled_dot_product_attention(q, k, v, mask, /*dropout_p=*/0.0, /*is_causal=*/false,
                                          sdpa_scale, /*enable_gqa=*/gqa);
#else
  const int64_t heads = q.size(-3);
  return at::scaled_dot_product_attention(q, expand_kv_heads(k, heads), expand_kv_heads(v, heads),
                                          mask, /*dropout_p=*/0.0, /*is_causal=*/false, sdpa_scale);
#endif
#else
  return attention_math(q, k, v, attn_mask, scale);
#endif
}

// SDPA's cuDNN backend (first on Hopper in recent 2.x releases, on by default with CUDA >= 12.9)
// builds an execution graph for every new shape and caches it by shape. dice's shapes change
// every call: packed SFT rows and trace lengths vary per step, each attention tile reads its own
// key count, the rollout's KV length grows every forward. SFT at the small recipe's shape ran
// 2.05 s a step with a new batch every step against 0.16-0.18 s with one batch repeated (H200,
// torch 2.11, sft_bench --vary-lengths, 2026-12-05; docs/BENCHMARKS.md, "Learner on the H200
// ... SFT ten times slower when shapes vary"). The flash and memory-efficient kernels need no
// per-shape plan.
void keep_sdpa_off_cudnn() {
#if DICE_TORCH_HAS_SDPA && DICE_TORCH_VERSION_AT_LEAST(2, 3)
  static const bool off = [] {
    at::globalContext().setSDPUseCuDNN(false);
    return true;
  }();
  (void)off;
#endif
}

bool sdpa_cudnn_enabled() {
#if DICE_TORCH_HAS_SDPA && DICE_TORCH_VERSION_AT_LEAST(2, 3)
  return at::globalContext().userEnabledCuDNNSDP();
#else
  return false;
#endif
}

bool cuda_available() {
  return torch::cuda::is_available();
}

void synchronize(const c10::Device& device) {
  if (device.is_cuda() && cuda_available()) torch::cuda::synchronize(device.index());
}

int cuda_device_count() {
  return cuda_available() ? static_cast<int>(torch::cuda::device_count()) : 0;
}

bool cuda_bf16_supported(int device) {
  if (device < 0 || device >= cuda_device_count()) return false;
  try {
    const auto options =
        at::TensorOptions().dtype(at::kBFloat16).device(at::Device(at::kCUDA, device));
    const at::Tensor a = at::ones({8, 8}, options);
    const at::Tensor product = at::matmul(a, a);
    return product.to(at::kFloat).sum().item<float>() == 8.0f * 64.0f;
  } catch (const c10::Error&) {
    return false;
  }
}

std::string describe_torch() {
  std::ostringstream out;
  out << "LibTorch " << TORCH_VERSION_MAJOR << "." << TORCH_VERSION_MINOR << "."
      << TORCH_VERSION_PATCH;
  const int devices = cuda_device_count();
  if (devices > 0) {
    out << " (CUDA, " << devices << (devices == 1 ? " device)" : " devices)");
  } else {
    out << " (CPU only)";
  }
  out << (DICE_TORCH_HAS_SDPA ? ", SDPA" : ", math attention");
  return out.str();
}

}  // namespace dice::compat
