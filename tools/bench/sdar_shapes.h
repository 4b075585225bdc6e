// What the GPU benchmarks share: the SDAR model shapes they run with random weights (weights do
// not change speed; the numbers are configs/models/sdar-{1.7b,4b}.yaml's), and the parsing of
// their comma-separated flags.
#pragma once

#include <cstdint>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "model/checkpoint/model_config.h"

namespace dice::bench {

struct NamedShape {
  std::string name;  // "1.7b", "4b"
  ModelConfig config;
};

inline ModelConfig sdar_config(int64_t hidden, int64_t intermediate, int64_t layers, int64_t heads,
                               int64_t kv_heads, bool tied) {
  ModelConfig c;
  c.vocab_size = 151936;
  c.hidden_size = hidden;
  c.intermediate_size = intermediate;
  c.num_hidden_layers = layers;
  c.num_attention_heads = heads;
  c.num_key_value_heads = kv_heads;
  c.head_dim = 128;
  c.rope_theta = 1e6;
  c.max_position_embeddings = 32768;
  c.tie_word_embeddings = tied;
  c.block_size = 4;
  c.mask_token_id = 151669;
  return c;
}

// SDAR-1.7B (tied embeddings) and SDAR-4B.
inline std::vector<NamedShape> sdar_shapes() {
  return {{"1.7b", sdar_config(2048, 6144, 28, 16, 8, /*tied=*/true)},
          {"4b", sdar_config(2560, 9728, 36, 32, 8, /*tied=*/false)}};
}

// A toy shape (vocabulary 64, mask id 63) for the benches' CPU smoke runs (--tiny).
inline NamedShape tiny_shape() {
  ModelConfig c = sdar_config(32, 48, 2, 4, 2, /*tied=*/false);
  c.vocab_size = 64;
  c.head_dim = 16;
  c.mask_token_id = 63;
  return {"tiny", c};
}

// "1,16,64" -> {"1", "16", "64"}: the form of --models, --batches, --strategies.
inline std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream in(text);
  for (std::string item; std::getline(in, item, ',');) out.push_back(item);
  return out;
}

// "1,16,64" -> {1, 16, 64}: the form of --batches. False, with the offending entry in *bad, for an
// entry that is not a positive integer.
inline bool parse_sizes(const std::string& text, std::vector<int64_t>* sizes, std::string* bad) {
  for (const std::string& item : split_list(text)) {
    std::size_t used = 0;
    long long value = 0;
    try {
      value = std::stoll(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != item.size() || value < 1) {
      *bad = item;
      return false;
    }
    sizes->push_back(value);
  }
  return true;
}

}  // namespace dice::bench
