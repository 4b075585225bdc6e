#include "learner/train/trace_loss.h"

#include <ATen/ATen.h>

namespace dice {

TraceTokenLoss trace_token_loss(const at::Tensor& new_log_probs, const at::Tensor& old_log_probs,
                                const at::Tensor& advantages, const PolicyLossOptions& options,
                                const at::Tensor& reference_log_probs) {
  TraceTokenLoss out;
  const at::Tensor log_ratio = new_log_probs - old_log_probs;
  const at::Tensor ratio = log_ratio.exp();
  const at::Tensor unclipped = ratio * advantages;
  const at::Tensor clipped =
      ratio.clamp(1.0 - options.clip_eps, 1.0 + options.clip_eps) * advantages;
  out.policy = -at::min(unclipped, clipped);
  const at::Tensor diff =
      reference_log_probs.defined() ? new_log_probs - reference_log_probs : log_ratio;
  switch (options.kl_estimator) {
    case KlEstimator::kK1:
      out.kl = diff;
      break;
    case KlEstimator::kK2:
      out.kl = 0.5 * diff * diff;
      break;
    case KlEstimator::kK3:
      out.kl = (-diff).exp() + diff - 1.0;
      break;
  }
  out.loss = options.kl_beta > 0 ? out.policy + options.kl_beta * out.kl : out.policy;
  out.ratio = ratio.detach();
  out.clipped = (out.ratio - 1.0).abs() > options.clip_eps;
  return out;
}

}  // namespace dice
