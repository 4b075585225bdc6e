// ModelConfig: the fields of a Hugging Face Qwen3 `config.json` that the block-diffusion model
// needs, plus SDAR's `block_size` and `mask_token_id`.
//
// Parsing is strict where a wrong value would silently change the math (attention_bias,
// sliding windows, rope scaling are rejected, not ignored) and names the file and key on every
// error: "ckpt/config.json: key 'hidden_size': expected an integer, got string".
#pragma once

#include <cstdint>
#include <string>

#include "common/status.h"

namespace dice {

struct ModelConfig {
  int64_t vocab_size = 0;                   // rows of embed_tokens / lm_head. Required
  int64_t hidden_size = 0;                  // model width. Required
  int64_t intermediate_size = 0;            // SwiGLU inner width. Required
  int64_t num_hidden_layers = 0;            // decoder layers. Required
  int64_t num_attention_heads = 0;          // query heads. Required
  int64_t num_key_value_heads = 0;          // key/value heads (GQA). Default: num_attention_heads
  int64_t head_dim = 0;                     // per-head width. Default: hidden / heads
  double rms_norm_eps = 1e-6;               // RMSNorm epsilon. Default: 1e-6
  double rope_theta = 10000.0;              // RoPE base. Default: 10000 (SDAR uses 1e6)
  int64_t max_position_embeddings = 32768;  // longest position trained. Default: 32768
  bool tie_word_embeddings = false;         // lm_head shares embed_tokens. Default: false
  int64_t block_size = 0;                   // diffusion block length (SDAR: 4). Required
  int64_t mask_token_id = -1;               // id of <|MASK|> (SDAR: 151669). Required
  std::string dtype = "bfloat16";           // dtype the weights were saved in. Default: bfloat16
  // The config.json text this was parsed from, so that a writer can keep fields dice does not
  // model (architectures, auto_map, token ids). Empty for a config built in code.
  std::string source_json;

  // Checks the relations between fields (heads divide evenly, sizes positive); `where` names the
  // source in errors.
  Status validate(const std::string& where) const;
};

// Parses `json_text`; `file_name` names the source in errors.
Result<ModelConfig> parse_model_config(const std::string& json_text, const std::string& file_name);
// Reads and parses a config.json file.
Result<ModelConfig> read_model_config(const std::string& path);
// The config.json text for `config`: source_json's fields kept, dice's fields overwritten, and
// the keys transformers needs to load a Qwen3 model (model_type, architectures) filled in.
std::string model_config_to_json(const ModelConfig& config);

}  // namespace dice
