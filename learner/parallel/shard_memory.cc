#include "learner/parallel/shard_memory.h"

#include <algorithm>

namespace dice {

ParameterBytes parameter_bytes(ShardMode mode, int gpus, int weight_bytes) {
  const double over = mode == ShardMode::kOptimizer ? std::max(gpus, 1) : 1;
  ParameterBytes out;
  out.weights = weight_bytes;
  out.gradients = weight_bytes;
  // Replicated float32 weights are their own masters; sharded ones keep a chunk's copy.
  const bool own_masters = weight_bytes == 4 && mode == ShardMode::kReplica;
  out.masters = own_masters ? 0 : 4 / over;
  out.moments = 8 / over;
  return out;
}

double gpu_bytes(double parameters, ShardMode mode, int gpus, int weight_bytes) {
  return parameters * parameter_bytes(mode, gpus, weight_bytes).total();
}

double model_parameters(const ModelShape& s) {
  const double hidden = s.hidden_size, head = s.head_dim;
  const double q = s.num_attention_heads * head, kv = s.num_key_value_heads * head;
  const double attention = hidden * q + 2 * hidden * kv + q * hidden + 2 * head;  // + q/k norms
  const double mlp = 3 * hidden * static_cast<double>(s.intermediate_size);
  const double layer = attention + mlp + 2 * hidden;  // + input and post-attention norms
  const double embeddings = static_cast<double>(s.vocab_size) * hidden;
  return embeddings * (s.tie_word_embeddings ? 1 : 2) + s.num_hidden_layers * layer + hidden;
}

}  // namespace dice
