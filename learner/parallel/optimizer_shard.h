// OptimizerShard: one data-parallel rank's part of a sharded optimizer (ZeRO stage 1 and 2,
// learner.data_parallel.shard: optimizer). The gradient buckets (gradient_buckets.h), padded to
// equal chunks, one per rank, are the layout of the shards:
//
//   bucket b's flat buffer   | chunk 0 | chunk 1 | ... | chunk N-1 (ends in padding zeros) |
//   rank r owns              chunk r of every bucket: its float32 masters and AdamW moments
//
// A step: the backward reduce-scatters each bucket as it fills (the reducer's overlap, through
// a collective whose "sum" is a reduce-scatter), so rank r holds the summed gradient of its
// chunks only; rank r clips with the global norm (each rank's sum of squares all-gathered and
// added in rank order, the same on every rank), runs AdamW on its chunks, writes them, rounded
// to the model's dtype, into its chunk of the bucket buffers, and the buffers are all-gathered
// and copied into the parameters. Every replica then holds the same weights, as after the
// replicated step, while each GPU holds 1/N of the masters and moments (4 + 4 + 4 bytes a
// parameter, over N) and its own gradient buffers (the bucket layout, as the replicated path).
// The collective needs start_reduce_scatter and start_all_gather only (never start_sum).
//
// With sharded parameters (ZeRO-3, parameter_shards.h) the decoder layers' weights are not in
// `params` and not in the buckets: ParameterShards already holds rank r's chunk of each layer's
// weights and of its summed gradient, so rank r keeps float32 masters and moments for those
// chunks too, adds their gradients' squares to the global norm, steps them with the rest and
// writes them, rounded, back into the shards' chunks (the next materialize gathers them).
#pragma once

#include <ATen/core/Tensor.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/status.h"
#include "learner/parallel/gradient_buckets.h"
#include "learner/parallel/gradient_collective.h"
#include "options/learner_options.h"

namespace torch::optim {
class AdamW;
}

namespace dice {

class GradientReducer;
class ParameterShards;

class OptimizerShard {
 public:
  // `params`: this rank's model parameters in the model's order (the same shapes on every rank,
  // equal values); `collective` (outlives the shard) is this rank's. The masters live on the
  // parameters' device, or in host memory when `on_cpu`. `layers` (sharded parameters; null
  // without): the decoder layers' shards, over the same collective, whose parameters `params`
  // then leaves out; it outlives the optimizer. InvalidArgument as GradientReducer; Internal
  // when LibTorch fails (out of memory, say).
  static Result<std::unique_ptr<OptimizerShard>> create(
      std::vector<at::Tensor> params, GradientCollective* collective, BucketPlanOptions buckets,
      const OptimizerOptions& optimizer, bool on_cpu, ParameterShards* layers = nullptr);
  ~OptimizerShard();
  OptimizerShard(const OptimizerShard&) = delete;
  OptimizerShard& operator=(const OptimizerShard&) = delete;

  // The reducer that fills the gradient buckets (zero, arm: as gradient_reducer.h).
  GradientReducer& reducer() { return *reducer_; }
  void zero_grad();
  // Finishes the reduce-scatter, clips, steps this rank's chunks and all-gathers the weights;
  // returns the global gradient norm before clipping. Every rank calls it together. Throws
  // c10::Error (a failed collective included).
  double step(double lr);
  std::int64_t steps() const;  // AdamW steps taken (as MasterWeights::steps)
  // Float32 elements of masters this rank holds (its chunks, padding included).
  std::int64_t master_numel() const;

  // This rank's masters and AdamW state in its own file, shard_file(path, rank): world size,
  // rank and chunk sizes are recorded and checked by load(), which writes the masters, rounded,
  // into this rank's chunks of the parameters (the other chunks come from the same checkpoint).
  // A file of another world size is InvalidArgument: resharding is not supported.
  Status save(const std::string& path) const;
  Status load(const std::string& path);
  // Rank 0's file is `path` itself (the resume folder's optimizer.pt); rank r's `path`.rank<r>.
  static std::string shard_file(const std::string& path, int rank);

 private:
  OptimizerShard() = default;
  // The parameters' values in bucket b's layout (padding zeros), in the parameters' dtype.
  at::Tensor flat_params(std::size_t b) const;
  void copy_into_params(std::size_t b, const at::Tensor& flat);
  at::Tensor own_chunk(const at::Tensor& flat) const;

  class ScatteringCollective;  // the reducer's collective: its sums are reduce-scatters
  std::vector<at::Tensor> params_;
  GradientCollective* collective_ = nullptr;
  std::unique_ptr<ScatteringCollective> scattering_;
  std::unique_ptr<GradientReducer> reducer_;
  std::vector<GradientBucket> buckets_;  // the reducer's plan (same inputs, deterministic)
  // Per bucket, then per sharded layer: this rank's chunk, float32.
  std::vector<at::Tensor> masters_;
  ParameterShards* layers_ = nullptr;
  double grad_clip_norm_ = 0;
  std::unique_ptr<torch::optim::AdamW> optimizer_;
};

}  // namespace dice
