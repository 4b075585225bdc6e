// The architecture of an SDAR block-diffusion model (Qwen3 layout). Key names equal the fields of
// the checkpoint's Hugging Face config.json, so a shape file and a checkpoint can be compared key
// by key (model/checkpoint/model_config.h reads the latter). configs/models/sdar-*.yaml hold the
// released sizes; tests build random-weight models from them without downloading a checkpoint.
#pragma once

#include <cstdint>
#include <string>

#include "common/config/config_errors.h"
#include "common/config/field_checks.h"

namespace dice {

struct ModelShape {
  std::string name;
  int vocab_size = 151936;
  int hidden_size = 0;
  int intermediate_size = 0;
  int num_hidden_layers = 0;
  int num_attention_heads = 0;
  int num_key_value_heads = 0;
  int head_dim = 128;
  double rope_theta = 1000000.0;
  double rms_norm_eps = 1e-6;
  int max_position_embeddings = 32768;
  bool tie_word_embeddings = false;
  int block_size = 4;
  std::uint32_t mask_token_id = 151669;

  template <class V>
  void visit_fields(V& v) {
    v.field("name", name, "Model name, e.g. SDAR-4B-Chat. Required.", config::required(),
            config::non_empty());
    v.field("vocab_size", vocab_size, "Rows of the embedding and LM-head matrices. Default: 151936",
            config::at_least(1));
    v.field("hidden_size", hidden_size, "Residual stream width. Required.", config::required(),
            config::at_least(1));
    v.field("intermediate_size", intermediate_size, "SwiGLU MLP inner width. Required.",
            config::required(), config::at_least(1));
    v.field("num_hidden_layers", num_hidden_layers, "Decoder layers. Required.", config::required(),
            config::at_least(1));
    v.field("num_attention_heads", num_attention_heads, "Query heads. Required.",
            config::required(), config::at_least(1));
    v.field("num_key_value_heads", num_key_value_heads,
            "Key/value heads (grouped-query attention). Required.", config::required(),
            config::at_least(1));
    v.field("head_dim", head_dim,
            "Width of one attention head (not hidden_size / heads in Qwen3). Default: 128",
            config::at_least(1));
    v.field("rope_theta", rope_theta, "Rotary embedding base. Default: 1000000",
            config::greater_than(0));
    v.field("rms_norm_eps", rms_norm_eps,
            "RMSNorm epsilon (layers, and q/k per head). Default: 1e-6", config::greater_than(0));
    v.field("max_position_embeddings", max_position_embeddings,
            "Longest position the model was trained on (prompt + response). Default: 32768",
            config::at_least(1));
    v.field("tie_word_embeddings", tie_word_embeddings,
            "LM head shares the embedding matrix. Default: false");
    v.field("block_size", block_size, "Diffusion block size the model was trained with. Default: 4",
            config::at_least(1));
    v.field("mask_token_id", mask_token_id, "Token id of <|MASK|>. Default: 151669");
  }

  void validate(config::Checker& c) const {
    if (num_key_value_heads > 0 && num_attention_heads % num_key_value_heads != 0) {
      c.error("num_key_value_heads",
              "must divide num_attention_heads (" + std::to_string(num_attention_heads) + ")");
    }
    if (static_cast<std::int64_t>(mask_token_id) >= vocab_size) {
      c.error("mask_token_id", "must be below vocab_size (" + std::to_string(vocab_size) + ")");
    }
  }
};

}  // namespace dice
