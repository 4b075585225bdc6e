// KvCache: the keys and values of committed blocks, per layer, for a batch of sequences of
// different lengths.
//
//   keys(l), values(l): [batch, capacity, num_key_value_heads, head_dim]
//   row b holds sequence b's tokens at positions 0 .. lengths()[b]-1; slots past the length are
//   free (a forward writes its chunk there and masks it out again unless it stores the chunk).
//
// Keys are stored after q/k-norm and RoPE, as attention uses them. The cache is plain state: the
// model reads and writes it inside Qwen3LM::forward_cached(); a scheduler frees a row for a new
// sequence with set_length(b, 0).
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/TensorOptions.h>

#include <cstdint>
#include <vector>

#include "model/checkpoint/model_config.h"

namespace dice {

class KvCache {
 public:
  // Zero-length rows with room for `capacity` tokens each. `options` sets dtype and device.
  KvCache(const ModelConfig& config, int64_t batch, int64_t capacity, c10::TensorOptions options);

  int64_t batch() const { return static_cast<int64_t>(lengths_.size()); }
  int64_t capacity() const { return capacity_; }
  int64_t num_layers() const { return static_cast<int64_t>(keys_.size()); }
  const std::vector<int64_t>& lengths() const { return lengths_; }
  void set_length(int64_t row, int64_t length);

  at::Tensor& keys(int64_t layer) { return keys_[static_cast<size_t>(layer)]; }
  at::Tensor& values(int64_t layer) { return values_[static_cast<size_t>(layer)]; }

 private:
  int64_t capacity_;
  std::vector<int64_t> lengths_;
  std::vector<at::Tensor> keys_;
  std::vector<at::Tensor> values_;
};

}  // namespace dice
