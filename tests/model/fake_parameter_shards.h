// FakeParameterShards: a test double of a learner's sharded parameters (LayerParameterHooks) for
// one rank of one: it does what ParameterShards would do around the collective, without one. Each
// decoder layer's parameters live between uses as one flat copy (the shard; the whole layer at
// world size 1) and hold no storage of their own; materialize() gathers a fresh full buffer from
// the copy (the all-gather's output) and points the parameters at it; after_backward() moves the
// layer's gradients into a flat gradient store (the reduce-scatter's destination). It records
// every call and the most layers whose parameters held storage at once, read from the
// parameters themselves.
#pragma once

#include <ATen/ATen.h>
#include <c10/util/accumulate.h>
#include <torch/csrc/autograd/grad_mode.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <map>
#include <utility>
#include <vector>

#include "model/layer_parameter_hooks.h"
#include "model/qwen3.h"

namespace dice {
namespace testing_util {

class FakeParameterShards : public LayerParameterHooks {
 public:
  enum class Call { kMaterialize, kReleaseAfterForward, kAfterBackward };
  struct LayerCall {
    Call call;
    int64_t layer;
    bool operator==(const LayerCall& other) const {
      return call == other.call && layer == other.layer;
    }
  };

  // Takes every layer of `model` into shards and leaves the layers' parameters empty.
  explicit FakeParameterShards(Qwen3ModelImpl& model) {
    torch::NoGradGuard no_grad;
    for (std::size_t i = 0; i < model.layers.size(); ++i) {
      LayerShard shard;
      std::vector<at::Tensor> flats;
      for (at::Tensor& p : model.layers[i]->parameters()) {
        owner_[p.unsafeGetTensorImpl()] = {i, shard.params.size()};
        shard.params.push_back(p);
        shard.shapes.push_back(p.sizes().vec());
        flats.push_back(p.detach().reshape(-1).clone());
      }
      shard.flat = at::cat(flats);
      layers_.push_back(std::move(shard));
      free_weights(i);
    }
  }

  void materialize(int64_t layer) override {
    calls_.push_back({Call::kMaterialize, layer});
    LayerShard& shard = layers_.at(static_cast<std::size_t>(layer));
    torch::NoGradGuard no_grad;
    at::Tensor full = shard.flat.clone();  // the all-gather's fresh output buffer
    int64_t offset = 0;
    for (std::size_t j = 0; j < shard.params.size(); ++j) {
      const int64_t numel = c10::multiply_integers(shard.shapes[j]);
      shard.params[j].set_(full.narrow(0, offset, numel).view(shard.shapes[j]));
      offset += numel;
    }
    peak_materialized_ = std::max(peak_materialized_, materialized_layers());
  }

  void release_after_forward(int64_t layer) override {
    calls_.push_back({Call::kReleaseAfterForward, layer});
    free_weights(static_cast<std::size_t>(layer));
  }

  void after_backward(int64_t layer) override {
    calls_.push_back({Call::kAfterBackward, layer});
    LayerShard& shard = layers_.at(static_cast<std::size_t>(layer));
    torch::NoGradGuard no_grad;
    std::vector<at::Tensor> grads;
    for (at::Tensor& p : shard.params) {
      TORCH_CHECK(p.grad().defined(), "FakeParameterShards: layer ", layer,
                  " has a parameter without a gradient after its backward");
      grads.push_back(p.grad().reshape(-1));
      p.mutable_grad() = at::Tensor();
    }
    at::Tensor flat = at::cat(grads);
    shard.grad = shard.grad.defined() ? shard.grad + flat : flat;  // micro-batches accumulate
    free_weights(static_cast<std::size_t>(layer));
  }

  // Whether `param` is a layer parameter these shards hold.
  bool holds(const at::Tensor& param) const {
    return owner_.count(param.unsafeGetTensorImpl()) != 0;
  }
  // The gradient after_backward stored for `param` (one held), shaped as the parameter;
  // undefined before any.
  at::Tensor gradient(const at::Tensor& param) const {
    const auto [layer, index] = owner_.at(param.unsafeGetTensorImpl());
    const LayerShard& shard = layers_[layer];
    if (!shard.grad.defined()) return at::Tensor();
    int64_t offset = 0;
    for (std::size_t j = 0; j < index; ++j) offset += c10::multiply_integers(shard.shapes[j]);
    return shard.grad.narrow(0, offset, c10::multiply_integers(shard.shapes[index]))
        .view(shard.shapes[index]);
  }

  // Layers any of whose parameters holds storage now.
  int64_t materialized_layers() const {
    int64_t count = 0;
    for (const LayerShard& shard : layers_) {
      count += std::any_of(shard.params.begin(), shard.params.end(),
                           [](const at::Tensor& p) { return p.storage().nbytes() > 0; });
    }
    return count;
  }
  // The most materialized_layers() seen right after a materialize().
  int64_t peak_materialized_layers() const { return peak_materialized_; }
  const std::vector<LayerCall>& calls() const { return calls_; }

 private:
  struct LayerShard {
    std::vector<at::Tensor> params;  // the layer's parameters, in parameters() order
    std::vector<std::vector<int64_t>> shapes;
    at::Tensor flat;  // the parameters' values, concatenated
    at::Tensor grad;  // their gradients, concatenated; undefined before the first backward
  };

  // set_ keeps each parameter the same tensor (the autograd leaf the model and the optimizer
  // hold) and drops its reference to the full buffer, which goes once no parameter points at it.
  void free_weights(std::size_t layer) {
    torch::NoGradGuard no_grad;
    for (at::Tensor& p : layers_[layer].params) p.set_(at::empty({0}, p.options()));
  }

  std::vector<LayerShard> layers_;
  std::map<const c10::TensorImpl*, std::pair<std::size_t, std::size_t>> owner_;  // layer, index
  std::vector<LayerCall> calls_;
  int64_t peak_materialized_ = 0;
};

}  // namespace testing_util
}  // namespace dice
