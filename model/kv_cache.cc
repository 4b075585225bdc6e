#include "model/kv_cache.h"

#include <ATen/ATen.h>
#include <c10/util/Exception.h>

namespace dice {

KvCache::KvCache(const ModelConfig& config, int64_t batch, int64_t capacity,
                 c10::TensorOptions options)
    : capacity_(capacity), lengths_(static_cast<size_t>(batch), 0) {
  TORCH_CHECK(batch > 0 && capacity > 0, "KvCache: batch and capacity must be > 0, got ", batch,
              " and ", capacity);
  for (int64_t l = 0; l < config.num_hidden_layers; ++l) {
    // Zeroed, not empty: slots beyond a row's length are always masked, but a NaN bit pattern
    // there would still poison softmax(.) * v through 0 * NaN.
    keys_.push_back(
        at::zeros({batch, capacity, config.num_key_value_heads, config.head_dim}, options));
    values_.push_back(
        at::zeros({batch, capacity, config.num_key_value_heads, config.head_dim}, options));
  }
}

void KvCache::set_length(int64_t row, int64_t length) {
  TORCH_CHECK(row >= 0 && row < batch(), "KvCache: row ", row, " outside [0, ", batch(), ")");
  TORCH_CHECK(length >= 0 && length <= capacity_, "KvCache: length ", length, " outside [0, ",
              capacity_, "]");
  lengths_[static_cast<size_t>(row)] = length;
}

}  // namespace dice
