#include "learner/train/training_flops.h"

namespace dice {

double decoder_params_per_token(const ModelConfig& c) {
  const double d = static_cast<double>(c.hidden_size);
  const double q = static_cast<double>(c.num_attention_heads * c.head_dim);
  const double kv = static_cast<double>(c.num_key_value_heads * c.head_dim);
  const double attention = d * q + 2 * d * kv + q * d;
  const double mlp = 3 * d * static_cast<double>(c.intermediate_size);
  return static_cast<double>(c.num_hidden_layers) * (attention + mlp);
}

double training_sequence_flops(const ModelConfig& c, std::int64_t length) {
  const std::int64_t block = c.block_size > 0 ? c.block_size : 1;
  const double b = static_cast<double>(block);
  const double blocks = static_cast<double>((length + block - 1) / block);
  const double pairs = b * b * blocks * (blocks + 1);
  const double linear = 2 * decoder_params_per_token(c) * 2 * static_cast<double>(length);
  const double attention = 4 * static_cast<double>(c.num_attention_heads * c.head_dim) * pairs *
                           static_cast<double>(c.num_hidden_layers);
  return linear + attention;
}

double training_views_flops(const ModelConfig& c, std::int64_t length, std::int64_t views) {
  // training_sequence_flops counts two halves; each half has half of its linear and attention
  // work (x_t's block and earlier clean blocks pair as often as x_0's block-causal pairs).
  return training_sequence_flops(c, length) / 2 * static_cast<double>(1 + views);
}

double lm_head_flops(const ModelConfig& c, std::int64_t scored) {
  return 2 * static_cast<double>(c.hidden_size) * static_cast<double>(c.vocab_size) *
         static_cast<double>(scored);
}

double training_forward_flops(const ModelConfig& c, std::int64_t rows, std::int64_t length,
                              std::int64_t scored) {
  return static_cast<double>(rows) * training_sequence_flops(c, length) + lm_head_flops(c, scored);
}

}  // namespace dice
