#include "learner/parallel/shard_memory.h"

#include <algorithm>

namespace dice {
namespace {

ParameterBytes times(const ParameterBytes& b, double parameters) {
  return {b.weights * parameters, b.gradients * parameters, b.masters * parameters,
          b.moments * parameters};
}

ParameterBytes plus(const ParameterBytes& a, const ParameterBytes& b) {
  return {a.weights + b.weights, a.gradients + b.gradients, a.masters + b.masters,
          a.moments + b.moments};
}

}  // namespace

ParameterBytes parameter_bytes(ShardMode mode, int gpus, int weight_bytes) {
  const double over = mode == ShardMode::kReplica ? 1 : std::max(gpus, 1);
  const double chunk = mode == ShardMode::kParameters ? over : 1;
  ParameterBytes out;
  out.weights = weight_bytes / chunk;
  out.gradients = weight_bytes / chunk;
  // Replicated float32 weights are their own masters; sharded ones keep a chunk's copy.
  const bool own_masters = weight_bytes == 4 && mode == ShardMode::kReplica;
  out.masters = own_masters ? 0 : 4 / over;
  out.moments = 8 / over;
  return out;
}

GpuState gpu_state(const ModelShape& shape, ShardMode mode, int gpus, int weight_bytes) {
  const double all = model_parameters(shape);
  GpuState out;
  if (mode != ShardMode::kParameters) {
    out.step = times(parameter_bytes(mode, gpus, weight_bytes), all);
    out.between = out.step;
    return out;
  }
  const double layer = layer_parameters(shape);
  const double layers = layer * shape.num_hidden_layers;
  const ParameterBytes rest =
      times(parameter_bytes(ShardMode::kOptimizer, gpus, weight_bytes), all - layers);
  const ParameterBytes chunks =
      times(parameter_bytes(ShardMode::kParameters, gpus, weight_bytes), layers);
  // The running layer: its whole weights, and in its backward its whole gradients with the flat
  // buffer they are reduce-scattered from.
  const ParameterBytes running = {weight_bytes * layer, 2.0 * weight_bytes * layer, 0, 0};
  out.step = plus(plus(rest, chunks), running);
  // GPU 0 between updates: every layer whole again, its own chunks slices of it (no second copy);
  // no layer's gradients beyond the chunks.
  ParameterBytes whole = chunks;
  whole.weights = weight_bytes * layers;
  out.between = plus(rest, whole);
  return out;
}

double layer_parameters(const ModelShape& s) {
  const double hidden = s.hidden_size, head = s.head_dim;
  const double q = s.num_attention_heads * head, kv = s.num_key_value_heads * head;
  const double attention = hidden * q + 2 * hidden * kv + q * hidden + 2 * head;  // + q/k norms
  const double mlp = 3 * hidden * static_cast<double>(s.intermediate_size);
  return attention + mlp + 2 * hidden;  // + input and post-attention norms
}

double model_parameters(const ModelShape& s) {
  const double embeddings = static_cast<double>(s.vocab_size) * s.hidden_size;
  return embeddings * (s.tie_word_embeddings ? 1 : 2) + s.num_hidden_layers * layer_parameters(s) +
         s.hidden_size;
}

}  // namespace dice
