// What one of the learner's GPUs holds of the model under each learner.data_parallel.shard mode
// (optimizer_shard.h, parameter_shards.h), before activations, for a bf16 model. Per parameter:
//
//                 weights  gradients  fp32 masters  AdamW moments   bytes, N GPUs
//   replica         2         2           4             8            16
//   optimizer       2         2           4 / N         8 / N        4 + 12 / N
//   parameters      2 / N     2 / N       4 / N         8 / N        16 / N  (a decoder layer's)
//
// The gradients are the bucket buffers (gradient_buckets.h), whole on every GPU under replica and
// optimizer (micro-batches accumulate into them before the last backward's reduce-scatter). Under
// parameters the decoder layers' weights and gradients are chunks too; the embeddings, the final
// norm and the LM head stay as under optimizer (4 + 12/N), and while a layer runs its whole
// weights are there (2 bytes each), and in its backward its whole gradients and the flat buffer
// they are reduce-scattered from (2 + 2). Between updates GPU 0 holds the whole weights again
// (data_parallel.h: for the checkpoints, the weight push and the learner's own forwards; its
// chunks are slices of them), so its peak is the larger of the step's state and that one. A float32
// model's masters are its weights in replica mode (no copy), a copy of the GPU's chunk when
// sharded. Activations are not counted here (they come on top of the step's state). No LibTorch, so
// the bench (tools/bench/learner/shard_fit.cc) and the config tools can print it.
#pragma once

#include <cstdint>

#include "options/learner_options.h"
#include "options/model_shape.h"

namespace dice {

// Bytes per parameter (parameter_bytes) or in all (gpu_state).
struct ParameterBytes {
  double weights = 0;
  double gradients = 0;
  double masters = 0;
  double moments = 0;
  double total() const { return weights + gradients + masters + moments; }
};

// Bytes a GPU holds per model parameter (under parameters: per decoder-layer parameter, between
// the layer's uses), for `gpus` >= 1 data-parallel GPUs and weights of `weight_bytes` (2: bf16,
// 4: float32).
ParameterBytes parameter_bytes(ShardMode mode, int gpus, int weight_bytes = 2);

// What one GPU holds of a model of `shape`, in bytes (GiB: divide by 1 << 30).
struct GpuState {
  ParameterBytes step;     // during an update, on every GPU (one layer's whole weights included)
  ParameterBytes between;  // GPU 0 between updates (whole weights under parameters)
  double peak() const { return step.total() > between.total() ? step.total() : between.total(); }
};
GpuState gpu_state(const ModelShape& shape, ShardMode mode, int gpus, int weight_bytes = 2);

// The weights of a model of this shape (configs/models/*.yaml): embeddings, the LM head unless
// tied, every decoder layer's q/k/v/o projections, SwiGLU MLP, two RMSNorms and the per-head q/k
// norms, and the final norm (Qwen3 has no biases). SDAR-8B's shape: 8,190,735,360.
double model_parameters(const ModelShape& shape);
// The weights of one decoder layer of this shape (SDAR-8B's: 192,946,432).
double layer_parameters(const ModelShape& shape);

}  // namespace dice
