#include "learner/parallel/master_weights.h"

#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>
#include <torch/nn/utils/clip_grad.h>
#include <torch/optim/adamw.h>
#include <torch/serialize/input-archive.h>
#include <torch/serialize/output-archive.h>

#include <algorithm>
#include <limits>
#include <utility>

#include "learner/parallel/archive_file.h"
#include "learner/parallel/gradient_reducer.h"
#include "learner/parallel/optimizer_shard.h"

namespace dice {

std::unique_ptr<torch::optim::AdamW> make_adamw(const std::vector<at::Tensor>& masters,
                                                const OptimizerOptions& options) {
  torch::optim::AdamWOptions adamw(options.lr);
  adamw.betas({options.beta1, options.beta2}).eps(options.eps).weight_decay(options.weight_decay);
  return std::make_unique<torch::optim::AdamW>(masters, adamw);
}

void set_adamw_lr(torch::optim::AdamW& adamw, double lr) {
  if (lr <= 0) return;
  for (auto& group : adamw.param_groups()) {
    static_cast<torch::optim::AdamWOptions&>(group.options()).lr(lr);
  }
}

std::int64_t adamw_steps(const torch::optim::AdamW& adamw) {
  std::int64_t steps = 0;  // every parameter steps together: the largest is any one's
  for (const auto& entry : adamw.state()) {
    steps =
        std::max(steps, static_cast<const torch::optim::AdamWParamState&>(*entry.second).step());
  }
  return steps;
}

void write_optimizer_state(const std::vector<at::Tensor>& masters, const torch::optim::AdamW& adamw,
                           torch::serialize::OutputArchive& archive) {
  archive.write("count", at::tensor(static_cast<std::int64_t>(masters.size())));
  for (std::size_t i = 0; i < masters.size(); ++i) {
    archive.write("master." + std::to_string(i), masters[i].detach().to(at::kCPU));
  }
  torch::serialize::OutputArchive state;
  adamw.save(state);
  archive.write("adamw", state);
}

MasterWeights::MasterWeights(Qwen3LMImpl& model, const OptimizerOptions& options, bool on_cpu)
    : grad_clip_norm_(options.grad_clip_norm) {
  for (at::Tensor& p : model.parameters()) {
    p.set_requires_grad(true);
    params_.push_back(p);
    separate_ = separate_ || p.scalar_type() != at::kFloat || (on_cpu && !p.device().is_cpu());
  }
  if (!params_.empty()) device_ = params_.front().device();
  if (separate_) {
    for (const at::Tensor& p : params_) {
      const c10::Device where = on_cpu ? c10::Device(at::kCPU) : p.device();
      masters_.push_back(p.detach().to(where, at::kFloat).clone().set_requires_grad(true));
    }
  } else {
    masters_ = params_;
  }
  optimizer_ = make_adamw(masters_, options);
}

MasterWeights::MasterWeights(Qwen3LMImpl& model, OptimizerShard* shard,
                             std::vector<const OptimizerShard*> process_shards)
    : grad_clip_norm_(0), shard_(shard), process_shards_(std::move(process_shards)) {
  params_ = model.parameters();
  if (!params_.empty()) device_ = params_.front().device();
}

MasterWeights::~MasterWeights() = default;

void MasterWeights::zero_grad() {
  if (shard_ != nullptr) return shard_->zero_grad();
  if (reducer_ != nullptr) return reducer_->zero();
  for (at::Tensor& p : params_) p.mutable_grad() = at::Tensor();
}

double MasterWeights::step(double lr) {
  if (shard_ != nullptr) return shard_->step(lr);
  if (reducer_ != nullptr) {
    const Status summed = reducer_->finish();
    TORCH_CHECK(summed.ok(), summed.to_string());
  }
  set_adamw_lr(*optimizer_, lr);
  if (separate_) {
    for (std::size_t i = 0; i < params_.size(); ++i) {
      const at::Tensor& g = params_[i].grad();
      masters_[i].mutable_grad() =
          g.defined() ? g.to(masters_[i].device(), at::kFloat) : at::zeros_like(masters_[i]);
    }
  }
  const double norm = torch::nn::utils::clip_grad_norm_(
      masters_, grad_clip_norm_ > 0 ? grad_clip_norm_ : std::numeric_limits<double>::infinity());
  optimizer_->step();
  optimizer_->zero_grad();
  if (separate_) {
    at::NoGradGuard no_grad;
    for (std::size_t i = 0; i < params_.size(); ++i) params_[i].copy_(masters_[i]);
  }
  zero_grad();
  return norm;
}

std::int64_t MasterWeights::steps() const {
  if (shard_ != nullptr) return shard_->steps();
  return adamw_steps(*optimizer_);
}

Status MasterWeights::save(const std::string& path) const {
  if (shard_ != nullptr) {
    for (const OptimizerShard* shard : process_shards_) DICE_RETURN_IF_ERROR(shard->save(path));
    return Status::ok_status();
  }
  torch::serialize::OutputArchive archive;
  try {
    write_optimizer_state(masters_, *optimizer_, archive);
  } catch (const c10::Error& e) {
    return Status::io_error("optimizer state " + path + ": " + e.what_without_backtrace());
  }
  return save_archive_file(archive, path, "optimizer state");
}

Status MasterWeights::load(const std::string& path) {
  if (shard_ != nullptr) return shard_->load(path);
  try {
    torch::serialize::InputArchive archive;
    archive.load_from(path);
    at::Tensor count;
    archive.read("count", count);
    if (count.item<std::int64_t>() != static_cast<std::int64_t>(masters_.size())) {
      return Status::invalid_argument(
          "optimizer state " + path + " holds " + std::to_string(count.item<std::int64_t>()) +
          " tensors, this model has " + std::to_string(masters_.size()));
    }
    at::NoGradGuard no_grad;
    for (std::size_t i = 0; i < masters_.size(); ++i) {
      at::Tensor saved;
      archive.read("master." + std::to_string(i), saved);
      if (!saved.sizes().equals(masters_[i].sizes())) {
        return Status::invalid_argument("optimizer state " + path + ": tensor " +
                                        std::to_string(i) + " has another shape than the model's");
      }
      masters_[i].copy_(saved);
      if (separate_) params_[i].copy_(masters_[i]);
    }
    torch::serialize::InputArchive adamw;
    archive.read("adamw", adamw);
    optimizer_->load(adamw);
  } catch (const c10::Error& e) {
    return Status::invalid_argument("optimizer state " + path + ": " + e.what_without_backtrace());
  }
  return Status::ok_status();
}

}  // namespace dice
