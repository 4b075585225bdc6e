// The Qwen3 decoder as SDAR uses it for block diffusion, in LibTorch modules that follow the math:
//
//   h_0 = embed(tokens)
//   for each layer:  a = h + Attention(RMSNorm(h));   h = a + MLP(RMSNorm(a))
//   logits = lm_head(RMSNorm(h))              (lm_head may share embed's weight)
//
//   Attention(x): q = RMSNorm_q(x Wq), k = RMSNorm_k(x Wk) per head; RoPE(q, k) at the tokens'
//                 positions; v = x Wv; softmax(q k^T / sqrt(head_dim), mask) v; then Wo.
//                 num_key_value_heads <= num_attention_heads (grouped-query attention).
//   MLP(x):       W_down(silu(x W_gate) * x W_up)                       (SwiGLU, no biases)
//
// Logits are NOT shifted: logit i predicts token i (masked-token prediction).
// The three attention layouts (block-causal, cached chunk, training) are in attention_masks.h;
// Qwen3LM has one method for each. Inference methods expect torch::NoGradGuard by the caller.
#pragma once

#include <torch/nn/module.h>
#include <torch/nn/pimpl.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "model/checkpoint/model_config.h"
#include "model/kv_cache.h"

namespace dice {

class LayerParameterHooks;
class TiledAttention;

// Parameters of every module below are plain tensors named as in Hugging Face checkpoints
// (q_proj is the weight of the q projection); weights.h maps them to checkpoint names.

// What every layer of one forward shares; built once per forward by Qwen3ModelImpl.
struct AttentionContext {
  at::Tensor cos;   // [B|1, T, head_dim] RoPE tables at the query positions, in the model's dtype
  at::Tensor sin;   // same shape
  at::Tensor mask;  // [B|1, 1, T, S] bool, true = may attend; cached mode: see below
  // Cached mode only (cache != nullptr): the N = B * T tokens of x are written into the cache at
  // `write_rows` (of the flattened [rows * capacity] cache) and attend over its first `key_slots`
  // slots as a query grid of [grid_rows = cache rows, grid_len] (CachedChunkLayout). The query
  // heads that share a key/value head go side by side, so `mask` is
  // [grid_rows, 1, groups * grid_len, key_slots] with groups = heads / kv_heads.
  KvCache* cache = nullptr;
  at::Tensor write_rows;  // [N] int64
  int64_t key_slots = 0;
  int64_t grid_rows = 0, grid_len = 0;
  at::Tensor grid_index;  // [N] int64: token i's place in the grid; undefined: x is the grid
  // Shared clean copies (Qwen3LM::hidden_training_views; attention_masks.h (d)): x's first
  // `clean_rows` rows are clean sequences, attending block-causally (`mask`); each row after them
  // is a noisy view that attends to its own row and to clean row `view_clean[v]`, through
  // `view_mask` [1, 1, T, 2T] (keys: the view's own, then its clean row's). 0: not this layout.
  int64_t clean_rows = 0;
  at::Tensor view_clean;  // [views] int64
  at::Tensor view_mask;
  // The training layouts: attention in query tiles that skip the keys their mask hides
  // (tiled_attention.h), planned from `mask` (tiles) and `view_mask` (view_tiles); null: one
  // dense attention over the mask.
  std::shared_ptr<const TiledAttention> tiles, view_tiles;
};

// Where the tokens of one cached-chunk forward go (attention_masks.h (b)), on the model's device.
// Row b of the cache takes a chunk of T tokens at positions length_b .. length_b + T - 1 of which
// the first valid_b are real. Padded, the forward runs on all rows x T tokens; packed, only on the
// real ones (the dense layers skip the padding; attention still runs on the [rows, T] grid).
// Built by Qwen3LM::chunk_layout(); a caller whose cache lengths stay the same over several
// forwards (the sampler's denoising steps) builds it once.
struct CachedChunkLayout {
  int64_t rows = 0;       // cache rows
  int64_t chunk_len = 0;  // T
  int64_t key_slots = 0;  // S = max(cache lengths) + T
  int64_t tokens = 0;     // N: tokens the forward runs on (rows * T unless packed)
  at::Tensor positions;   // [rows, T] padded, [1, N] packed; int64
  at::Tensor write_rows;  // [N] int64: row * capacity + position
  at::Tensor mask;        // [rows, 1, groups * T, S] bool (AttentionContext)
  at::Tensor grid_index;  // packed: [N] int64, b * T + t of each token; undefined when padded
};

// y = w * x / sqrt(mean(x^2) + eps), computed in float32 and cast back to the input dtype.
class RMSNormImpl : public torch::nn::Module {
 public:
  RMSNormImpl(int64_t dim, double eps, const c10::TensorOptions& options = {});
  at::Tensor forward(const at::Tensor& x);
  at::Tensor weight;

 private:
  double eps_;
};
TORCH_MODULE(RMSNorm);

class Qwen3AttentionImpl : public torch::nn::Module {
 public:
  Qwen3AttentionImpl(const ModelConfig& config, int64_t layer_index,
                     const c10::TensorOptions& options = {});
  at::Tensor forward(const at::Tensor& x, const AttentionContext& ctx);

  at::Tensor q_proj, k_proj, v_proj, o_proj;  // Linear weights [out, in], no bias
  RMSNorm q_norm{nullptr}, k_norm{nullptr};   // over head_dim, shared by all heads

 private:
  int64_t layer_index_, heads_, kv_heads_, head_dim_;
};
TORCH_MODULE(Qwen3Attention);

class Qwen3MlpImpl : public torch::nn::Module {
 public:
  explicit Qwen3MlpImpl(const ModelConfig& config, const c10::TensorOptions& options = {});
  at::Tensor forward(const at::Tensor& x);
  at::Tensor gate_proj, up_proj, down_proj;
};
TORCH_MODULE(Qwen3Mlp);

class Qwen3DecoderLayerImpl : public torch::nn::Module {
 public:
  Qwen3DecoderLayerImpl(const ModelConfig& config, int64_t layer_index,
                        const c10::TensorOptions& options = {});
  at::Tensor forward(const at::Tensor& x, const AttentionContext& ctx);

  RMSNorm input_layernorm{nullptr}, post_attention_layernorm{nullptr};
  Qwen3Attention self_attn{nullptr};
  Qwen3Mlp mlp{nullptr};
};
TORCH_MODULE(Qwen3DecoderLayer);

// Embedding, decoder layers and final norm: tokens -> hidden states.
class Qwen3ModelImpl : public torch::nn::Module {
 public:
  explicit Qwen3ModelImpl(const ModelConfig& config, const c10::TensorOptions& options = {});
  // input_ids [B, T]; positions [B|1, T] int64; ctx.mask and the cache fields set by the caller.
  at::Tensor forward(const at::Tensor& input_ids, const at::Tensor& positions,
                     AttentionContext ctx);

  at::Tensor embed_tokens;  // [vocab, hidden]
  std::vector<Qwen3DecoderLayer> layers;
  RMSNorm norm{nullptr};
  // With gradients on (training), keep one hidden state per layer and recompute the rest in
  // backward (layer_checkpoint.h). Default: false
  bool activation_checkpointing = false;
  // Sharded parameters (layer_parameter_hooks.h): called around each layer's forward and its
  // backward recomputation to gather and free the layer's weights. Needs
  // activation_checkpointing (a forward refuses them without it); not owned, must outlive the
  // backward pass. Default: nullptr (the weights stay in place; no calls)
  LayerParameterHooks* parameter_hooks = nullptr;
  // Queries per tile of the training layouts' attention (tiled_attention.h: each tile reads only
  // the keys its queries may see); 0: one tile. Exact either way. Default: 0
  int64_t attention_tile = 0;

 private:
  ModelConfig config_;
  at::Tensor inv_freq_;  // [head_dim / 2] RoPE frequencies, float32
};
TORCH_MODULE(Qwen3Model);

// The ForCausalLM equivalent: Qwen3Model plus lm_head, and one entry point per attention layout.
class Qwen3LMImpl : public torch::nn::Module {
 public:
  // Parameters are created with `options` (dtype, device) and filled with N(0, 0.02) noise (norm
  // weights with ones); load_weights() then overwrites them from a checkpoint.
  explicit Qwen3LMImpl(const ModelConfig& config, const c10::TensorOptions& options = {});

  // Any layout: input_ids [B, T], positions [B|1, T], mask [B|1, 1, T, T]. Logits [B, T, vocab].
  at::Tensor forward(const at::Tensor& input_ids, const at::Tensor& positions,
                     const at::Tensor& mask);

  // (a) block-causal over whole sequences at positions 0..L-1: input_ids [B, L].
  at::Tensor forward_block_causal(const at::Tensor& input_ids);

  // (b) a chunk of T tokens per row against `cache` (prefill of whole prompt blocks, or one
  // decode block of block_size tokens). Row b's chunk starts at position cache.lengths()[b],
  // which must be a multiple of block_size (unless valid[b] is 0: a row with nothing to do);
  // its first valid[b] tokens are real, the rest padding.
  // With store, the chunk's keys/values stay in the cache (lengths grow by valid[b]); without,
  // the cache's contents and lengths are left as they were. Logits [B, T, vocab].
  at::Tensor forward_cached(const at::Tensor& input_ids, const std::vector<int64_t>& valid,
                            KvCache& cache, bool store);

  // (b) without logits: stores a chunk's keys/values (prompt prefill, whose logits nobody reads)
  // and skips lm_head, the largest matmul for long chunks. Same rules as forward_cached.
  void prefill(const at::Tensor& input_ids, const std::vector<int64_t>& valid, KvCache& cache);

  // (b) in two parts, for a caller that reuses the layout or reads a few logits only.
  // chunk_layout(): the layout of chunks of `chunk_len` tokens, `valid` real, against `cache`'s
  // current lengths (the rules of forward_cached), on `device`; packed: see CachedChunkLayout.
  // key_slots_multiple > 1 rounds the key slots attention reads up to a multiple of it (at most
  // the cache's capacity; the mask hides the extra slots): fewer distinct shapes for a caller
  // that captures a CUDA graph per shape, for a little more attention work.
  CachedChunkLayout chunk_layout(const KvCache& cache, const std::vector<int64_t>& valid,
                                 int64_t chunk_len, bool packed, c10::Device device,
                                 int64_t key_slots_multiple = 1) const;
  // Final hidden states of the chunk: input_ids [rows, T] (padded) or [N] (packed, the real
  // tokens row after row); [rows, T, hidden] or [N, hidden]. The chunk's keys/values are written
  // past the cache lengths, which are left as they were: a caller that keeps some of them sets
  // the lengths (KvCache::set_length). The cache lengths must be those the layout was built for.
  at::Tensor hidden_chunk(const at::Tensor& input_ids, const CachedChunkLayout& layout,
                          KvCache& cache);

  // (c) training: x_t and x_0 [B, L]. Returns the logits of the x_t half [B, L, vocab], the only
  // ones the diffusion loss reads (x_0 is context).
  at::Tensor forward_training(const at::Tensor& x_t, const at::Tensor& x_0);
  // (c) up to the final hidden states of the x_t half [B, L, hidden]: a loss that reads a few
  // positions gathers them first and runs lm_head (the vocabulary-sized matmul) on those only.
  at::Tensor hidden_training(const at::Tensor& x_t, const at::Tensor& x_0);
  // (c) packed: x_t and x_0 [1, L] hold several sequences of `lengths` (each a whole number of
  // blocks, summing to L) that do not see each other (attention_masks.h). Hidden states of the
  // x_t half [1, L, hidden], each sequence's exactly as hidden_training() gives it alone.
  at::Tensor hidden_training_packed(const at::Tensor& x_t, const at::Tensor& x_0,
                                    const std::vector<int64_t>& lengths);
  // (c) packed, several rows in one forward: x_t and x_0 [R, L], row r holding sequences of
  // row_lengths[r] (whole blocks, summing to L; pad a shorter row with a filler sequence, which
  // sees only itself). [R, L, hidden], each sequence's as hidden_training() gives it alone. One
  // forward of R rows instead of R forwards: what a small model needs to fill a GPU.
  at::Tensor hidden_training_rows(const at::Tensor& x_t, const at::Tensor& x_0,
                                  const std::vector<std::vector<int64_t>>& row_lengths);

  // (d) several noisy views of each clean sequence, the clean copy run once: x_t [V, L] views,
  // x_0 [C, L] clean sequences, view v a view of clean row view_clean[v]. The views' hidden
  // states [V, L, hidden], each as hidden_training(x_t[v], x_0[view_clean[v]]) gives it, for
  // (C + V) L tokens through the weights instead of 2 V L.
  at::Tensor hidden_training_views(const at::Tensor& x_t, const at::Tensor& x_0,
                                   const std::vector<int64_t>& view_clean);

  // Final hidden states -> logits.
  at::Tensor logits(const at::Tensor& hidden);

  const ModelConfig& config() const { return config_; }

  Qwen3Model model{nullptr};
  at::Tensor lm_head;  // [vocab, hidden]; the same tensor as embed_tokens when tied

 private:
  // The training layouts' common part: [x_t, x_0] through the model with `mask` and `positions`
  // ([2L], or [B, 2L] per row); the hidden states of the x_t half.
  at::Tensor hidden_x_t(const at::Tensor& x_t, const at::Tensor& x_0, const at::Tensor& mask,
                        const at::Tensor& positions);
  // The plan of a training layout's attention over `mask` (model->attention_tile queries a tile).
  std::shared_ptr<const TiledAttention> plan_tiles(const at::Tensor& mask) const;
  // forward_cached() up to the final hidden states [B, T, hidden].
  at::Tensor hidden_cached(const at::Tensor& input_ids, const std::vector<int64_t>& valid,
                           KvCache& cache, bool store);

  ModelConfig config_;
};
TORCH_MODULE(Qwen3LM);

}  // namespace dice
