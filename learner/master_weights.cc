#include "learner/master_weights.h"

#include <ATen/ATen.h>
#include <torch/nn/utils/clip_grad.h>
#include <torch/optim/adamw.h>

#include <limits>

namespace dice {

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
  torch::optim::AdamWOptions adamw(options.lr);
  adamw.betas({options.beta1, options.beta2}).eps(options.eps).weight_decay(options.weight_decay);
  optimizer_ = std::make_unique<torch::optim::AdamW>(masters_, adamw);
}

MasterWeights::~MasterWeights() = default;

void MasterWeights::zero_grad() {
  for (at::Tensor& p : params_) p.mutable_grad() = at::Tensor();
}

double MasterWeights::step(double lr) {
  if (lr > 0) {
    for (auto& group : optimizer_->param_groups()) {
      static_cast<torch::optim::AdamWOptions&>(group.options()).lr(lr);
    }
  }
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

}  // namespace dice
