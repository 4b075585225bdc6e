#include "learner/parallel/parameter_shards.h"

#include <ATen/ATen.h>
#include <c10/util/accumulate.h>
#include <torch/csrc/autograd/grad_mode.h>

#include <stdexcept>
#include <string>

namespace dice {
namespace {

// A failed collective inside a hook: the forward or backward pass that called it fails with it.
void throw_if_failed(const Status& status, const char* what, std::size_t layer) {
  if (status.ok()) return;
  throw std::runtime_error("sharded parameters: " + std::string(what) + " of layer " +
                           std::to_string(layer) + ": " + status.to_string());
}

}  // namespace

ParameterShards::ParameterShards(Qwen3ModelImpl& model, GradientCollective* collective,
                                 std::size_t first_bucket)
    : collective_(collective), first_bucket_(first_bucket) {
  const int64_t world = collective_->world_size();
  const int64_t rank = collective_->rank();
  torch::NoGradGuard no_grad;
  for (std::size_t i = 0; i < model.layers.size(); ++i) {
    LayerShard shard;
    std::vector<at::Tensor> flats;
    for (at::Tensor& p : model.layers[i]->parameters()) {
      shard.params.push_back(p);
      shard.shapes.push_back(p.sizes().vec());
      flats.push_back(p.detach().reshape(-1));
      shard.numel += p.numel();
    }
    shard.chunk = (shard.numel + world - 1) / world;
    at::Tensor flat = at::cat(flats);
    shard.values = at::zeros({shard.chunk}, flat.options());
    const int64_t begin = rank * shard.chunk;
    const int64_t have = std::min(shard.chunk, std::max<int64_t>(0, shard.numel - begin));
    if (have > 0) shard.values.narrow(0, 0, have).copy_(flat.narrow(0, begin, have));
    shard.grad = at::zeros_like(shard.values);
    layers_.push_back(std::move(shard));
    release(i);
  }
}

ParameterShards::LayerShard& ParameterShards::shard(int64_t layer) {
  if (layer < 0 || layer >= layers()) {
    throw std::out_of_range("sharded parameters: no layer " + std::to_string(layer) + " of " +
                            std::to_string(layers()));
  }
  return layers_[static_cast<std::size_t>(layer)];
}

int64_t ParameterShards::chunk_numel(int64_t layer) const {
  return layers_.at(static_cast<std::size_t>(layer)).chunk;
}

at::Tensor& ParameterShards::values(int64_t layer) {
  return shard(layer).values;
}

const at::Tensor& ParameterShards::gradient(int64_t layer) const {
  return layers_.at(static_cast<std::size_t>(layer)).grad;
}

void ParameterShards::zero_gradients() {
  torch::NoGradGuard no_grad;
  for (LayerShard& s : layers_) s.grad.zero_();
}

Status ParameterShards::gather(std::size_t layer) {
  LayerShard& s = layers_[layer];
  const int64_t world = collective_->world_size();
  torch::NoGradGuard no_grad;
  at::Tensor full = at::empty({s.chunk * world}, s.values.options());
  full.narrow(0, collective_->rank() * s.chunk, s.chunk).copy_(s.values);
  DICE_RETURN_IF_ERROR(collective_->start_all_gather(first_bucket_ + layer, full));
  DICE_RETURN_IF_ERROR(collective_->wait());
  int64_t offset = 0;
  for (std::size_t j = 0; j < s.params.size(); ++j) {
    const int64_t numel = c10::multiply_integers(s.shapes[j]);
    s.params[j].set_(full.narrow(0, offset, numel).view(s.shapes[j]));
    offset += numel;
  }
  // While the layer is whole its chunk is the buffer's own slice: no second copy (GPU 0 holds
  // every layer whole between steps).
  s.values = full.narrow(0, collective_->rank() * s.chunk, s.chunk);
  s.values_in_buffer = true;
  return Status::ok_status();
}

// set_ keeps each parameter the same tensor and drops its reference to the full buffer; the
// chunk gets its own storage first, or it would keep the buffer alive.
void ParameterShards::release(std::size_t layer) {
  torch::NoGradGuard no_grad;
  LayerShard& s = layers_[layer];
  if (s.values_in_buffer) {
    s.values = s.values.clone();
    s.values_in_buffer = false;
  }
  for (at::Tensor& p : s.params) p.set_(at::empty({0}, p.options()));
}

void ParameterShards::materialize(int64_t layer) {
  shard(layer);
  throw_if_failed(gather(static_cast<std::size_t>(layer)), "all-gather", layer);
}

void ParameterShards::release_after_forward(int64_t layer) {
  shard(layer);
  release(static_cast<std::size_t>(layer));
}

void ParameterShards::after_backward(int64_t layer) {
  LayerShard& s = shard(layer);
  const int64_t world = collective_->world_size();
  torch::NoGradGuard no_grad;
  at::Tensor flat = at::zeros({s.chunk * world}, s.values.options());
  int64_t offset = 0;
  for (at::Tensor& p : s.params) {
    // A parameter the loss did not reach has no gradient: zeros in the sum.
    if (p.grad().defined()) flat.narrow(0, offset, p.numel()).copy_(p.grad().reshape(-1));
    offset += p.numel();
    p.mutable_grad() = at::Tensor();
  }
  const std::size_t index = static_cast<std::size_t>(layer);
  throw_if_failed(collective_->start_reduce_scatter(first_bucket_ + index, flat), "reduce-scatter",
                  index);
  throw_if_failed(collective_->wait(), "reduce-scatter", index);
  s.grad.add_(flat.narrow(0, collective_->rank() * s.chunk, s.chunk));
  release(index);
}

Status ParameterShards::gather_all() {
  for (std::size_t i = 0; i < layers_.size(); ++i) {
    DICE_RETURN_IF_ERROR(
        gather(i).with_context("sharded parameters: all-gather of layer " + std::to_string(i)));
  }
  return Status::ok_status();
}

void ParameterShards::release_all() {
  for (std::size_t i = 0; i < layers_.size(); ++i) release(i);
}

int64_t ParameterShards::materialized_layers() const {
  int64_t count = 0;
  for (const LayerShard& s : layers_) {
    for (const at::Tensor& p : s.params) {
      if (p.storage().nbytes() > 0) {
        ++count;
        break;
      }
    }
  }
  return count;
}

}  // namespace dice
