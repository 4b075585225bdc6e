// What the GPU benchmarks share: the SDAR model shapes they run with random weights (weights do
// not change speed; the numbers are configs/models/sdar-{1.7b,4b}.yaml's), and the parsing of
// their comma-separated flags.
#pragma once

#include <cstdint>
#include <cstdio>
#include <functional>
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

// The small recipe's model (configs/models/sdar-tiny.yaml, ~27M parameters with the vocabulary
// pruned to the curriculum's ~1,700 tokens): where launches and host syncs, not FLOPs, bound.
inline ModelConfig small_recipe_config() {
  ModelConfig c = sdar_config(512, 1536, 8, 8, 4, /*tied=*/false);
  c.vocab_size = 1792;
  c.head_dim = 64;
  c.rope_theta = 10000;
  c.max_position_embeddings = 4096;
  c.mask_token_id = 1791;
  return c;
}

// SDAR-1.7B (tied embeddings), SDAR-4B, and the small recipe's model ("27m").
inline std::vector<NamedShape> sdar_shapes() {
  return {{"1.7b", sdar_config(2048, 6144, 28, 16, 8, /*tied=*/true)},
          {"4b", sdar_config(2560, 9728, 36, 32, 8, /*tied=*/false)},
          {"27m", small_recipe_config()}};
}

// A toy shape (vocabulary 64, mask id 63) for the benches' CPU smoke runs (--tiny).
inline NamedShape tiny_shape() {
  ModelConfig c = sdar_config(32, 48, 2, 4, 2, /*tied=*/false);
  c.vocab_size = 64;
  c.head_dim = 16;
  c.mask_token_id = 63;
  return {"tiny", c};
}

// The shapes named by --models ("1.7b,4b"), or the toy shape alone with --tiny.
inline std::vector<NamedShape> selected_shapes(const std::vector<std::string>& models, bool tiny) {
  if (tiny) return {tiny_shape()};
  std::vector<NamedShape> out;
  for (const NamedShape& s : sdar_shapes()) {
    for (const std::string& m : models) {
      if (s.name == m) out.push_back(s);
    }
  }
  return out;
}

// Walks a bench's flags: `on_flag(flag, value)` for each, where value() takes the next argument
// (throwing when there is none); the handler throws std::invalid_argument for an unknown flag or
// a bad value (std::stoi's own exceptions are caught too). False, after "<bench>: <flag>: why" on
// stderr, for the first flag that fails.
inline bool parse_flags(
    int argc, char** argv, const char* bench,
    const std::function<void(const std::string& flag, const std::function<std::string()>& value)>&
        on_flag) {
  std::string flag;
  try {
    for (int i = 1; i < argc; ++i) {
      flag = argv[i];
      on_flag(flag, [&]() -> std::string {
        if (i + 1 >= argc) throw std::invalid_argument("needs a value");
        return argv[++i];
      });
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s: %s\n", bench, flag.c_str(), e.what());
    return false;
  }
  return true;
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
