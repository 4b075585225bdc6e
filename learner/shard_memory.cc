#include "learner/shard_memory.h"

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

}  // namespace dice
