// The roofline of one block-diffusion decode forward (issue 24 item 1): what a denoising step
// must move and compute, and the fastest the H200 could run it.
//
// One forward: `batch` rows, each a chunk of `block` tokens (the block being denoised) against a
// KV cache of `context` committed tokens. Counted:
//   weights   every decoder weight and lm_head once (embeddings are a lookup), 2 bytes each
//   KV        every row's cached keys and values, every layer: context x 2 x layers x kv_heads x
//             head_dim x 2 bytes a row (plus the chunk's own, negligible)
//   FLOPs     2 x (decoder weights + lm_head) per chunk token, and attention: 4 x heads x
//             head_dim x layers x (context + block) per chunk token (Q K^T and A V)
// Floor = max(FLOPs / peak FLOP/s, bytes / bandwidth). Tokens committed a forward: block /
// denoising_steps per row with static remasking (DICE: 4 / 4 = 1), more with dynamic (a measured
// figure). Ceiling tok/s = committed / floor.
#pragma once

#include <algorithm>
#include <cstdint>

#include "model/checkpoint/model_config.h"

namespace dice::bench {

struct DecodeRoofline {
  double weight_bytes = 0, kv_bytes = 0, flops = 0;
  double compute_s = 0, memory_s = 0, floor_s = 0;
  bool memory_bound = false;
  double committed = 0;      // tokens committed a forward, all rows
  double ceiling_tok_s = 0;  // committed / floor_s
};

struct HardwareLimits {
  double peak_flops = 790e12;  // bf16 dense, measured on the H200 node (REFERENCE.md)
  double bandwidth = 4.8e12;   // HBM3e bytes/s, the H200's datasheet
};

inline double decoder_weights(const ModelConfig& c) {
  const double q = static_cast<double>(c.hidden_size) * c.num_attention_heads * c.head_dim;
  const double kv = 2.0 * c.hidden_size * c.num_key_value_heads * c.head_dim;
  const double o = static_cast<double>(c.num_attention_heads) * c.head_dim * c.hidden_size;
  const double mlp = 3.0 * c.hidden_size * c.intermediate_size;
  return (q + kv + o + mlp) * static_cast<double>(c.num_hidden_layers);
}

inline DecodeRoofline decode_roofline(const ModelConfig& c, std::int64_t batch,
                                      std::int64_t context, double committed_per_row,
                                      const HardwareLimits& hw = {}) {
  DecodeRoofline r;
  const double weights = decoder_weights(c) + static_cast<double>(c.vocab_size) * c.hidden_size;
  const double tokens = static_cast<double>(batch) * c.block_size;
  const double kv_per_token =
      2.0 * c.num_hidden_layers * c.num_key_value_heads * c.head_dim * 2.0;  // bytes, bf16
  r.weight_bytes = 2.0 * weights;
  r.kv_bytes = static_cast<double>(batch) * static_cast<double>(context) * kv_per_token;
  r.flops = 2.0 * weights * tokens + 4.0 * c.num_attention_heads * c.head_dim *
                                         c.num_hidden_layers * tokens *
                                         static_cast<double>(context + c.block_size);
  r.compute_s = r.flops / hw.peak_flops;
  r.memory_s = (r.weight_bytes + r.kv_bytes) / hw.bandwidth;
  r.floor_s = std::max(r.compute_s, r.memory_s);
  r.memory_bound = r.memory_s >= r.compute_s;
  r.committed = committed_per_row * static_cast<double>(batch);
  r.ceiling_tok_s = r.committed / r.floor_s;
  return r;
}

}  // namespace dice::bench
