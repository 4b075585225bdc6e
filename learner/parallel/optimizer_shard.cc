#include "learner/parallel/optimizer_shard.h"

#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>
#include <torch/optim/adamw.h>
#include <torch/serialize/input-archive.h>
#include <torch/serialize/output-archive.h>

#include <algorithm>
#include <cmath>
#include <utility>

#include "learner/parallel/archive_file.h"
#include "learner/parallel/gradient_reducer.h"
#include "learner/parallel/master_weights.h"
#include "learner/parallel/parameter_shards.h"

namespace dice {

// Hands the reducer's bucket sums on as reduce-scatters, and keeps the bucket buffers they were
// started on: after the step they carry the updated weights for the all-gather.
class OptimizerShard::ScatteringCollective : public GradientCollective {
 public:
  explicit ScatteringCollective(GradientCollective* inner) : inner_(inner) {}
  int world_size() const override { return inner_->world_size(); }
  int rank() const override { return inner_->rank(); }
  Status start_sum(std::size_t bucket, const at::Tensor& flat) override {
    if (flats_.size() <= bucket) flats_.resize(bucket + 1);
    flats_[bucket] = flat;
    return inner_->start_reduce_scatter(bucket, flat);
  }
  Status start_reduce_scatter(std::size_t bucket, const at::Tensor& flat) override {
    return inner_->start_reduce_scatter(bucket, flat);
  }
  Status start_all_gather(std::size_t bucket, const at::Tensor& flat) override {
    return inner_->start_all_gather(bucket, flat);
  }
  Status wait() override { return inner_->wait(); }
  void abort(const Status& why) override { inner_->abort(why); }
  const at::Tensor& flat(std::size_t bucket) const { return flats_.at(bucket); }

 private:
  GradientCollective* inner_;
  std::vector<at::Tensor> flats_;
};

Result<std::unique_ptr<OptimizerShard>> OptimizerShard::create(
    std::vector<at::Tensor> params, GradientCollective* collective, BucketPlanOptions buckets,
    const OptimizerOptions& optimizer, bool on_cpu, ParameterShards* layers) {
  if (collective == nullptr) return Status::invalid_argument("OptimizerShard: no collective");
  std::unique_ptr<OptimizerShard> shard(new OptimizerShard());
  buckets.chunks = collective->world_size();
  shard->collective_ = collective;
  shard->grad_clip_norm_ = optimizer.grad_clip_norm;
  shard->scattering_ = std::make_unique<ScatteringCollective>(collective);
  try {
    for (at::Tensor& p : params) p.set_requires_grad(true);
    DICE_ASSIGN_OR_RETURN(shard->reducer_,
                          GradientReducer::create(params, shard->scattering_.get(), buckets));
    // The reducer's plan again: the same parameters and options give the same buckets.
    std::vector<BucketParam> sizes;
    std::vector<std::pair<at::ScalarType, c10::Device>> groups;
    for (const at::Tensor& p : params) {
      const std::pair<at::ScalarType, c10::Device> key{p.scalar_type(), p.device()};
      const auto group = std::find(groups.begin(), groups.end(), key) - groups.begin();
      if (group == static_cast<std::ptrdiff_t>(groups.size())) groups.push_back(key);
      sizes.push_back(
          {p.numel(), static_cast<std::int64_t>(p.element_size()), static_cast<int>(group)});
    }
    shard->buckets_ = plan_gradient_buckets(sizes, buckets);
    shard->params_ = std::move(params);
    for (std::size_t b = 0; b < shard->buckets_.size(); ++b) {
      const at::Tensor own = shard->own_chunk(shard->flat_params(b));
      const c10::Device where = on_cpu ? c10::Device(at::kCPU) : own.device();
      shard->masters_.push_back(own.to(where, at::kFloat).clone().set_requires_grad(true));
    }
    shard->layers_ = layers;
    for (int64_t i = 0; layers != nullptr && i < layers->layers(); ++i) {
      const at::Tensor& own = layers->values(i);
      const c10::Device where = on_cpu ? c10::Device(at::kCPU) : own.device();
      shard->masters_.push_back(own.to(where, at::kFloat).clone().set_requires_grad(true));
    }
    shard->optimizer_ = make_adamw(shard->masters_, optimizer);
  } catch (const c10::Error& e) {
    return Status::internal(std::string("OptimizerShard: ") + e.what_without_backtrace());
  }
  return shard;
}

OptimizerShard::~OptimizerShard() {
  optimizer_.reset();
  reducer_.reset();  // its hooks go before the collective they call
}

at::Tensor OptimizerShard::flat_params(std::size_t b) const {
  const GradientBucket& bucket = buckets_[b];
  const at::Tensor& first = params_[bucket.params.front()];
  at::Tensor flat = at::zeros({bucket.numel}, first.options());
  at::NoGradGuard no_grad;
  for (std::size_t s = 0; s < bucket.params.size(); ++s) {
    const at::Tensor& p = params_[bucket.params[s]];
    flat.narrow(0, bucket.offsets[s], p.numel()).copy_(p.detach().reshape({-1}));
  }
  return flat;
}

void OptimizerShard::copy_into_params(std::size_t b, const at::Tensor& flat) {
  const GradientBucket& bucket = buckets_[b];
  at::NoGradGuard no_grad;
  for (std::size_t s = 0; s < bucket.params.size(); ++s) {
    at::Tensor& p = params_[bucket.params[s]];
    p.copy_(flat.narrow(0, bucket.offsets[s], p.numel()).view(p.sizes()));
  }
}

at::Tensor OptimizerShard::own_chunk(const at::Tensor& flat) const {
  const std::int64_t chunk = flat.numel() / collective_->world_size();
  return flat.narrow(0, chunk * collective_->rank(), chunk);
}

void OptimizerShard::zero_grad() {
  reducer_->zero();
  if (layers_ != nullptr) layers_->zero_gradients();
}

double OptimizerShard::step(double lr) {
  const Status scattered = reducer_->finish();
  TORCH_CHECK(scattered.ok(), scattered.to_string());
  set_adamw_lr(*optimizer_, lr);
  at::NoGradGuard no_grad;
  // The global norm: every rank's sum of squares, all-gathered and added in rank order, so that
  // every rank clips by the same factor. Summed on the device: no host sync per bucket.
  const c10::Device device = params_.empty() ? c10::Device(at::kCPU) : params_.front().device();
  const auto on_device = at::TensorOptions().dtype(at::kFloat).device(device);
  at::Tensor squares = at::zeros({1}, on_device);
  for (std::size_t b = 0; b < buckets_.size(); ++b) {
    // A copy, never a view of the bucket: the optimizer detach_()es its gradients in place.
    at::Tensor grad = own_chunk(scattering_->flat(b))
                          .to(masters_[b].device(), at::kFloat, /*non_blocking=*/false,
                              /*copy=*/true);
    squares += grad.square().sum().to(device);
    masters_[b].mutable_grad() = grad;
  }
  // The sharded layers' chunks: their gradients were reduce-scattered by the backward's hooks.
  for (std::size_t k = buckets_.size(); k < masters_.size(); ++k) {
    const auto layer = static_cast<int64_t>(k - buckets_.size());
    at::Tensor grad = layers_->gradient(layer).to(masters_[k].device(), at::kFloat,
                                                  /*non_blocking=*/false, /*copy=*/true);
    squares += grad.square().sum().to(device);
    masters_[k].mutable_grad() = grad;
  }
  at::Tensor all = at::zeros({collective_->world_size()}, on_device);
  all.narrow(0, collective_->rank(), 1).copy_(squares);
  Status gathered = collective_->start_all_gather(buckets_.size(), all);
  if (gathered.ok()) gathered = collective_->wait();
  TORCH_CHECK(gathered.ok(), gathered.to_string());
  const double norm = std::sqrt(all.to(at::kCPU, at::kDouble).sum().item<double>());
  // As torch::nn::utils::clip_grad_norm_ does it.
  const double clip = grad_clip_norm_ > 0 ? grad_clip_norm_ / (norm + 1e-6) : 1.0;
  if (clip < 1) {
    for (at::Tensor& m : masters_) m.mutable_grad().mul_(clip);
  }
  optimizer_->step();
  optimizer_->zero_grad();
  Status started = Status::ok_status();
  for (std::size_t b = 0; b < buckets_.size() && started.ok(); ++b) {
    const at::Tensor& flat = scattering_->flat(b);
    own_chunk(flat).copy_(masters_[b]);
    started = collective_->start_all_gather(b, flat);
  }
  if (started.ok()) started = collective_->wait();
  TORCH_CHECK(started.ok(), started.to_string());
  for (std::size_t b = 0; b < buckets_.size(); ++b) copy_into_params(b, scattering_->flat(b));
  for (std::size_t k = buckets_.size(); k < masters_.size(); ++k) {
    layers_->values(static_cast<int64_t>(k - buckets_.size())).copy_(masters_[k]);
  }
  zero_grad();
  return norm;
}

std::int64_t OptimizerShard::steps() const {
  return adamw_steps(*optimizer_);
}

std::int64_t OptimizerShard::master_numel() const {
  std::int64_t n = 0;
  for (const at::Tensor& m : masters_) n += m.numel();
  return n;
}

std::string OptimizerShard::shard_file(const std::string& path, int rank) {
  return rank == 0 ? path : path + ".rank" + std::to_string(rank);
}

Status OptimizerShard::save(const std::string& path) const {
  const std::string file = shard_file(path, collective_->rank());
  torch::serialize::OutputArchive archive;
  try {
    archive.write("world_size", at::tensor(static_cast<std::int64_t>(collective_->world_size())));
    archive.write("rank", at::tensor(static_cast<std::int64_t>(collective_->rank())));
    write_optimizer_state(masters_, *optimizer_, archive);
  } catch (const c10::Error& e) {
    return Status::io_error("optimizer shard " + file + ": " + e.what_without_backtrace());
  }
  return save_archive_file(archive, file, "optimizer shard");
}

Status OptimizerShard::load(const std::string& path) {
  const std::string file = shard_file(path, collective_->rank());
  try {
    torch::serialize::InputArchive archive;
    archive.load_from(file);
    at::Tensor world;
    at::Tensor rank;
    at::Tensor count;
    if (!archive.try_read("world_size", world)) {
      return Status::invalid_argument("optimizer state " + file +
                                      " is not sharded (learner.data_parallel.shard: replica "
                                      "wrote it): resharding is not supported");
    }
    archive.read("rank", rank);
    archive.read("count", count);
    if (world.item<std::int64_t>() != collective_->world_size() ||
        rank.item<std::int64_t>() != collective_->rank() ||
        count.item<std::int64_t>() != static_cast<std::int64_t>(masters_.size())) {
      return Status::invalid_argument(
          "optimizer shard " + file + " is rank " + std::to_string(rank.item<std::int64_t>()) +
          " of " + std::to_string(world.item<std::int64_t>()) + " with " +
          std::to_string(count.item<std::int64_t>()) + " master chunks; this is rank " +
          std::to_string(collective_->rank()) + " of " + std::to_string(collective_->world_size()) +
          " with " + std::to_string(masters_.size()) + " (resharding is not supported)");
    }
    at::NoGradGuard no_grad;
    for (std::size_t b = 0; b < masters_.size(); ++b) {
      at::Tensor saved;
      archive.read("master." + std::to_string(b), saved);
      if (!saved.sizes().equals(masters_[b].sizes())) {
        return Status::invalid_argument("optimizer shard " + file + ": bucket " +
                                        std::to_string(b) + " has another size than the model's");
      }
      masters_[b].copy_(saved);
      if (b >= buckets_.size()) {  // a sharded layer's chunk: the next materialize gathers it
        layers_->values(static_cast<int64_t>(b - buckets_.size())).copy_(masters_[b]);
        continue;
      }
      at::Tensor flat = flat_params(b);
      own_chunk(flat).copy_(masters_[b]);
      copy_into_params(b, flat);
    }
    torch::serialize::InputArchive adamw;
    archive.read("adamw", adamw);
    optimizer_->load(adamw);
  } catch (const c10::Error& e) {
    return Status::invalid_argument("optimizer shard " + file + ": " + e.what_without_backtrace());
  }
  return Status::ok_status();
}

}  // namespace dice
