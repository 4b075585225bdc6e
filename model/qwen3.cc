#include "model/qwen3.h"

#include <ATen/ATen.h>

#include <cmath>
#include <cstddef>
#include <string>

#include "model/layer_checkpoint.h"
#include "model/layer_parameter_hooks.h"
#include "model/tiled_attention.h"
#include "model/torch_compat.h"

namespace dice {
namespace {

constexpr double kInitStd = 0.02;  // transformers' initializer_range for Qwen3

at::Tensor linear_weight(torch::nn::Module& m, const std::string& name, int64_t out, int64_t in,
                         const c10::TensorOptions& options) {
  return m.register_parameter(name, at::empty({out, in}, options).normal_(0.0, kInitStd));
}

// [x1, x2] -> [-x2, x1] over the last dimension: RoPE's rotation in Qwen3's half-split layout.
at::Tensor rotate_half(const at::Tensor& x) {
  const int64_t half = x.size(-1) / 2;
  return at::cat({-x.narrow(-1, half, half), x.narrow(-1, 0, half)}, -1);
}

}  // namespace

RMSNormImpl::RMSNormImpl(int64_t dim, double eps, const c10::TensorOptions& options) : eps_(eps) {
  weight = register_parameter("weight", at::ones({dim}, options));
}

at::Tensor RMSNormImpl::forward(const at::Tensor& x) {
  // float32 at least (bf16 would round the mean of squares); float64 stays float64.
  at::Tensor x32 = x.to(c10::promoteTypes(x.scalar_type(), at::kFloat));
  at::Tensor normed = x32 * at::rsqrt(x32.pow(2).mean(-1, /*keepdim=*/true) + eps_);
  return weight * normed.to(x.scalar_type());
}

Qwen3AttentionImpl::Qwen3AttentionImpl(const ModelConfig& c, int64_t layer_index,
                                       const c10::TensorOptions& options)
    : layer_index_(layer_index),
      heads_(c.num_attention_heads),
      kv_heads_(c.num_key_value_heads),
      head_dim_(c.head_dim) {
  q_proj = linear_weight(*this, "q_proj", heads_ * head_dim_, c.hidden_size, options);
  k_proj = linear_weight(*this, "k_proj", kv_heads_ * head_dim_, c.hidden_size, options);
  v_proj = linear_weight(*this, "v_proj", kv_heads_ * head_dim_, c.hidden_size, options);
  o_proj = linear_weight(*this, "o_proj", c.hidden_size, heads_ * head_dim_, options);
  q_norm = register_module("q_norm", RMSNorm(head_dim_, c.rms_norm_eps, options));
  k_norm = register_module("k_norm", RMSNorm(head_dim_, c.rms_norm_eps, options));
}

at::Tensor Qwen3AttentionImpl::forward(const at::Tensor& x, const AttentionContext& ctx) {
  const int64_t batch = x.size(0), len = x.size(1);
  // [B, T, heads, head_dim]: the norms act per head, before RoPE.
  at::Tensor q = q_norm(at::linear(x, q_proj).view({batch, len, heads_, head_dim_}));
  at::Tensor k = k_norm(at::linear(x, k_proj).view({batch, len, kv_heads_, head_dim_}));
  at::Tensor v = at::linear(x, v_proj).view({batch, len, kv_heads_, head_dim_});

  // Already in x's dtype (Qwen3ModelImpl::forward): .to() is then free.
  at::Tensor cos = ctx.cos.to(x.scalar_type()).unsqueeze(2);  // [B|1, T, 1, head_dim]
  at::Tensor sin = ctx.sin.to(x.scalar_type()).unsqueeze(2);
  q = q * cos + rotate_half(q) * sin;
  k = k * cos + rotate_half(k) * sin;

  const double scale = 1.0 / std::sqrt(static_cast<double>(head_dim_));
  if (ctx.cache == nullptr && ctx.clean_rows > 0) {
    // Clean rows block-causal over themselves; each view over its own row and its clean row's
    // keys, gathered (the gradient of a clean row's keys and values sums over its views).
    const int64_t clean = ctx.clean_rows, views = batch - clean;
    at::Tensor qt = q.transpose(1, 2), kt = k.transpose(1, 2), vt = v.transpose(1, 2);
    at::Tensor k_clean = kt.narrow(0, 0, clean), v_clean = vt.narrow(0, 0, clean);
    at::Tensor out_clean =
        ctx.tiles->attend(qt.narrow(0, 0, clean), {{k_clean, {}}}, {{v_clean, {}}}, scale);
    at::Tensor out_views = ctx.view_tiles->attend(
        qt.narrow(0, clean, views), {{kt.narrow(0, clean, views), {}}, {k_clean, ctx.view_clean}},
        {{vt.narrow(0, clean, views), {}}, {v_clean, ctx.view_clean}}, scale);
    at::Tensor out = at::cat({out_clean, out_views}, 0);  // [B, heads, T, head_dim]
    return at::linear(out.transpose(1, 2).reshape({batch, len, heads_ * head_dim_}), o_proj);
  }
  if (ctx.cache == nullptr) {
    at::Tensor qt = q.transpose(1, 2), kt = k.transpose(1, 2), vt = v.transpose(1, 2);
    at::Tensor out = ctx.tiles ? ctx.tiles->attend(qt, {{kt, {}}}, {{vt, {}}}, scale)
                               : compat::scaled_dot_product_attention(qt, kt, vt, ctx.mask, scale);
    // [B, heads, T, head_dim]
    return at::linear(out.transpose(1, 2).reshape({batch, len, heads_ * head_dim_}), o_proj);
  }

  // Write the chunk into its slots first, then attend over the cache's first S slots; the mask
  // hides every slot that is neither committed nor part of this chunk.
  const int64_t tokens = batch * len;
  at::Tensor& k_cache = ctx.cache->keys(layer_index_);
  at::Tensor& v_cache = ctx.cache->values(layer_index_);
  const int64_t cache_rows = k_cache.size(0) * k_cache.size(1);
  k_cache.view({cache_rows, kv_heads_, head_dim_})
      .index_copy_(0, ctx.write_rows, k.reshape({tokens, kv_heads_, head_dim_}));
  v_cache.view({cache_rows, kv_heads_, head_dim_})
      .index_copy_(0, ctx.write_rows, v.reshape({tokens, kv_heads_, head_dim_}));
  at::Tensor keys = k_cache.narrow(1, 0, ctx.key_slots).transpose(1, 2);  // [R, kv, S, hd]
  at::Tensor values = v_cache.narrow(1, 0, ctx.key_slots).transpose(1, 2);

  // The query grid [R, T'] (packed tokens scattered into it; the gaps are zero queries whose
  // output nobody reads), with the `groups` query heads of each key/value head side by side:
  // [R, T', kv, groups, hd] -> [R, kv, groups * T', hd]. Attention then reads each key/value head
  // as it is in the cache, with no copy per query head (GQA without expanding the cache).
  const int64_t rows = ctx.grid_rows, grid_len = ctx.grid_len, groups = heads_ / kv_heads_;
  at::Tensor grid = q.reshape({tokens, heads_, head_dim_});
  if (ctx.grid_index.defined()) {
    grid = at::zeros({rows * grid_len, heads_, head_dim_}, q.options())
               .index_copy_(0, ctx.grid_index, grid);
  }
  grid = grid.view({rows, grid_len, kv_heads_, groups, head_dim_})
             .permute({0, 2, 3, 1, 4})
             .reshape({rows, kv_heads_, groups * grid_len, head_dim_});
  at::Tensor out = compat::scaled_dot_product_attention(grid, keys, values, ctx.mask, scale);
  out = out.reshape({rows, kv_heads_, groups, grid_len, head_dim_})
            .permute({0, 3, 1, 2, 4})
            .reshape({rows * grid_len, heads_ * head_dim_});
  if (ctx.grid_index.defined()) out = out.index_select(0, ctx.grid_index);
  return at::linear(out.view({batch, len, heads_ * head_dim_}), o_proj);
}

Qwen3MlpImpl::Qwen3MlpImpl(const ModelConfig& c, const c10::TensorOptions& options) {
  gate_proj = linear_weight(*this, "gate_proj", c.intermediate_size, c.hidden_size, options);
  up_proj = linear_weight(*this, "up_proj", c.intermediate_size, c.hidden_size, options);
  down_proj = linear_weight(*this, "down_proj", c.hidden_size, c.intermediate_size, options);
}

at::Tensor Qwen3MlpImpl::forward(const at::Tensor& x) {
  return at::linear(at::silu(at::linear(x, gate_proj)) * at::linear(x, up_proj), down_proj);
}

Qwen3DecoderLayerImpl::Qwen3DecoderLayerImpl(const ModelConfig& c, int64_t layer_index,
                                             const c10::TensorOptions& options) {
  input_layernorm =
      register_module("input_layernorm", RMSNorm(c.hidden_size, c.rms_norm_eps, options));
  self_attn = register_module("self_attn", Qwen3Attention(c, layer_index, options));
  post_attention_layernorm =
      register_module("post_attention_layernorm", RMSNorm(c.hidden_size, c.rms_norm_eps, options));
  mlp = register_module("mlp", Qwen3Mlp(c, options));
}

at::Tensor Qwen3DecoderLayerImpl::forward(const at::Tensor& x, const AttentionContext& ctx) {
  at::Tensor h = x + self_attn(input_layernorm(x), ctx);
  return h + mlp(post_attention_layernorm(h));
}

Qwen3ModelImpl::Qwen3ModelImpl(const ModelConfig& c, const c10::TensorOptions& options)
    : config_(c) {
  compat::keep_sdpa_off_cudnn();  // before any thread (data-parallel replicas) attends
  embed_tokens = register_parameter(
      "embed_tokens", at::empty({c.vocab_size, c.hidden_size}, options).normal_(0.0, kInitStd));
  for (int64_t i = 0; i < c.num_hidden_layers; ++i) {
    layers.push_back(
        register_module("layers_" + std::to_string(i), Qwen3DecoderLayer(c, i, options)));
  }
  norm = register_module("norm", RMSNorm(c.hidden_size, c.rms_norm_eps, options));
}

at::Tensor Qwen3ModelImpl::forward(const at::Tensor& input_ids, const at::Tensor& positions,
                                   AttentionContext ctx) {
  // RoPE tables in float32 (float64 for a float64 model): inv_freq_i = theta^(-2i/d), angle =
  // position * inv_freq, and the half-split layout repeats the angles: [a_0 .. a_{d/2-1}, a_0 ..
  // a_{d/2-1}].
  const int64_t d = config_.head_dim;
  const at::ScalarType table = c10::promoteTypes(embed_tokens.scalar_type(), at::kFloat);
  at::Tensor exponents = at::arange(0, d, 2, positions.options().dtype(at::kLong))
                             .to(table)
                             .div(static_cast<double>(d));
  at::Tensor inv_freq = at::pow(config_.rope_theta, exponents).reciprocal();
  at::Tensor angles = positions.to(table).unsqueeze(-1) * inv_freq;  // [B|1, T, d/2]
  at::Tensor emb = at::cat({angles, angles}, -1);
  // Cast once here rather than in every layer (the same values: one float32 -> dtype cast).
  ctx.cos = emb.cos().to(embed_tokens.scalar_type());
  ctx.sin = emb.sin().to(embed_tokens.scalar_type());

  at::Tensor h = at::embedding(embed_tokens, input_ids);
  const bool recompute = activation_checkpointing && at::GradMode::is_enabled() && !ctx.cache;
  if (parameter_hooks == nullptr) {
    for (auto& layer : layers) h = recompute ? checkpointed_layer(*layer, h, ctx) : layer(h, ctx);
    return norm(h);
  }
  // Sharded parameters: a layer's weights are freed once its forward is done, so autograd must
  // not have saved them for the backward pass; only the checkpointed layers' recomputation
  // brings them back for it.
  TORCH_CHECK(activation_checkpointing,
              "Qwen3Model: parameter_hooks (sharded parameters) need activation_checkpointing: "
              "without it autograd keeps every layer's full weights for the backward pass");
  TORCH_CHECK(recompute || !at::GradMode::is_enabled(),
              "Qwen3Model: parameter_hooks with gradients need a training forward (no KV cache)");
  for (std::size_t i = 0; i < layers.size(); ++i) {
    const auto index = static_cast<int64_t>(i);
    if (recompute) {
      h = checkpointed_layer(*layers[i], h, ctx, parameter_hooks, index);
      continue;
    }
    parameter_hooks->materialize(index);
    h = layers[i](h, ctx);
    parameter_hooks->release_after_forward(index);
  }
  return norm(h);
}

}  // namespace dice
