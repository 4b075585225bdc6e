// ParameterShards: a learner rank's sharded decoder-layer parameters (ZeRO-3 / FSDP style), the
// LayerParameterHooks (model/layer_parameter_hooks.h) a data-parallel replica sets on its model.
// Rank r of N keeps, between uses, only chunk r of each layer's weights; the full weights of one
// layer exist while it runs:
//
//   layout      layer i's parameters (parameters() order) flattened and concatenated, padded with
//               zeros to N equal chunks; chunk r is this rank's (values and gradient)
//   materialize all-gather of the chunks into a fresh flat buffer; each parameter points at its
//               slice (set_, so it stays the autograd leaf the optimizer and weight sync hold),
//               and so does the rank's chunk (no second copy while the layer is whole)
//   release     the chunk copied out of the buffer, every parameter set back to an empty
//               tensor: the buffer goes with the last one
//   after_backward  the layer's gradients flattened in the same layout and reduce-scattered: chunk
//               r of their sum over the ranks is added to this rank's gradient chunk (micro-batches
//               accumulate there, as .grad does); .grad is reset and the weights released
//
// Every rank constructs its shards from equal weights (replicas made alike) and runs the same
// layers in the same order, as the collective requires. Buckets: layer i's operations use
// `first_bucket + i`, so they never meet the gradient reducer's. A failed collective throws
// (std::runtime_error naming the layer and the collective's error): the forward or backward pass
// that called the hook fails with it. Left to the learner: the optimizer step on the chunks
// (values()/gradient()), gradient clipping over them, gathering for a checkpoint or the weight
// push (gather_all), prefetch and stream overlap. Not thread-safe: the rank's one training thread
// calls it.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "common/status.h"
#include "learner/parallel/gradient_collective.h"
#include "model/layer_parameter_hooks.h"
#include "model/qwen3.h"

namespace dice {

class ParameterShards : public LayerParameterHooks {
 public:
  // Takes every decoder layer of `model` into shards for collective->rank() of
  // collective->world_size(), leaving the layers' parameters empty. `collective` outlives this.
  ParameterShards(Qwen3ModelImpl& model, GradientCollective* collective, std::size_t first_bucket);

  void materialize(int64_t layer) override;
  void release_after_forward(int64_t layer) override;
  void after_backward(int64_t layer) override;

  int64_t layers() const { return static_cast<int64_t>(layers_.size()); }
  // Elements of one chunk of `layer` (its padded flat size / world size).
  int64_t chunk_numel(int64_t layer) const;
  // This rank's chunk of layer `layer`'s weights: the optimizer steps it in place. While the
  // layer is whole it is a view of the whole weights' buffer (writing it writes them).
  at::Tensor& values(int64_t layer);
  // This rank's chunk of the layer's gradient, summed over the ranks and accumulated over the
  // backward passes since zero_gradients(); zeros before any.
  const at::Tensor& gradient(int64_t layer) const;
  void zero_gradients();

  // Every layer's full weights gathered back into its parameters (a checkpoint, the weight
  // push, an evaluation without hooks); collective: every rank calls it. release_all() empties
  // them again.
  Status gather_all();
  void release_all();

  // Layers any of whose parameters holds storage now (for tests and memory checks).
  int64_t materialized_layers() const;

 private:
  struct LayerShard {
    std::vector<at::Tensor> params;  // the layer's parameters, in parameters() order
    std::vector<std::vector<int64_t>> shapes;
    int64_t numel = 0;              // the parameters' elements, before padding
    int64_t chunk = 0;              // elements of one chunk
    at::Tensor values;              // this rank's chunk of the weights
    at::Tensor grad;                // this rank's chunk of the summed gradient
    bool values_in_buffer = false;  // `values` is a view of the gathered buffer
  };

  Status gather(std::size_t layer);
  void release(std::size_t layer);
  LayerShard& shard(int64_t layer);

  GradientCollective* collective_;
  std::size_t first_bucket_;
  std::vector<LayerShard> layers_;
};

}  // namespace dice
