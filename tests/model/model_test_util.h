// Shared by the model tests: a tiny Qwen3 config and weights large enough that attention
// patterns, norms and RoPE visibly change the logits (the default N(0, 0.02) init would not).
#pragma once

#include <ATen/ATen.h>
#include <torch/csrc/autograd/grad_mode.h>

#include <cmath>

#include "model/checkpoint/model_config.h"
#include "model/qwen3.h"
#include "model/weights.h"

namespace dice {
namespace testing_util {

// 4 query heads over 2 key/value heads (GQA), head_dim 16 != hidden / heads = 8 (so head_dim is
// read from the config, not derived), untied lm_head.
inline ModelConfig tiny_config() {
  ModelConfig c;
  c.vocab_size = 64;
  c.hidden_size = 32;
  c.intermediate_size = 48;
  c.num_hidden_layers = 2;
  c.num_attention_heads = 4;
  c.num_key_value_heads = 2;
  c.head_dim = 16;
  c.rms_norm_eps = 1e-6;
  c.rope_theta = 10000.0;
  c.max_position_embeddings = 128;
  c.tie_word_embeddings = false;
  c.block_size = 4;
  c.mask_token_id = 63;
  c.dtype = "float32";
  return c;
}

// Unit-scale random weights: embeddings N(0, 1), linear weights N(0, 1/in), norms 1 + N(0, 0.1).
inline Qwen3LM random_lm(const ModelConfig& config, uint64_t seed) {
  at::manual_seed(seed);
  Qwen3LM lm(config);
  torch::NoGradGuard no_grad;
  for (NamedParameter& p : hf_named_parameters(*lm)) {
    if (p.tensor.dim() == 1) {
      p.tensor.copy_(1.0 + 0.1 * at::randn_like(p.tensor));
    } else if (p.name == "model.embed_tokens.weight") {
      p.tensor.normal_(0.0, 1.0);
    } else {
      p.tensor.normal_(0.0, 1.0 / std::sqrt(static_cast<double>(p.tensor.size(1))));
    }
  }
  return lm;
}

inline at::Tensor random_tokens(int64_t batch, int64_t len, const ModelConfig& config) {
  return at::randint(0, config.vocab_size - 1, {batch, len}, at::kLong);
}

}  // namespace testing_util
}  // namespace dice
