// What one of the learner's GPUs holds per model parameter under each learner.data_parallel.shard
// mode (optimizer_shard.h), before activations, for a bf16 model:
//
//                 weights  gradients  fp32 masters  AdamW moments   bytes, N GPUs
//   replica         2         2           4             8            16
//   optimizer       2         2           4 / N         8 / N        4 + 12 / N
//
// The gradients are the bucket buffers (gradient_buckets.h), whole on every GPU in both modes
// (micro-batches accumulate into them before the last backward's reduce-scatter). A float32
// model's masters are its weights in replica mode (no copy), a copy of the GPU's chunk when
// sharded. Activations are not counted here. No LibTorch, so the bench
// (tools/bench/learner/shard_fit.cc) and the config tools can print it.
#pragma once

#include <cstdint>

#include "options/learner_options.h"
#include "options/model_shape.h"

namespace dice {

struct ParameterBytes {
  double weights = 0;
  double gradients = 0;
  double masters = 0;
  double moments = 0;
  double total() const { return weights + gradients + masters + moments; }
};

// Bytes a GPU holds per model parameter, for `gpus` >= 1 data-parallel GPUs and weights of
// `weight_bytes` (2: bf16, 4: float32).
ParameterBytes parameter_bytes(ShardMode mode, int gpus, int weight_bytes = 2);

// The same for a model of `parameters` weights, in bytes (GiB: divide by 1 << 30).
double gpu_bytes(double parameters, ShardMode mode, int gpus, int weight_bytes = 2);

// The weights of a model of this shape (configs/models/*.yaml): embeddings, the LM head unless
// tied, every decoder layer's q/k/v/o projections, SwiGLU MLP, two RMSNorms and the per-head q/k
// norms, and the final norm (Qwen3 has no biases). SDAR-8B's shape: 8,190,735,360.
double model_parameters(const ModelShape& shape);

}  // namespace dice
