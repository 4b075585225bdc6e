// The TraceRL token loss (REFERENCE section 3), for the tokens one trace view scores:
//
//   ratio_t = exp(log pi_new(t) - log pi_old(t))
//   pg_t    = -min(ratio_t * A, clip(ratio_t, 1 - eps, 1 + eps) * A)
//   kl_t    = k1: new - ref    k2: (new - ref)^2 / 2    k3: exp(ref - new) - (ref - new) - 1
//   loss_t  = pg_t + beta * kl_t
//
// A is the sequence's z-scored group advantage (the same for all its tokens). The sequence's
// loss is sum_t loss_t / response length; the trainer averages sequences. The KL's reference
// (loss.kl_reference) is by default the policy that sampled, ref = old (its log-probs came with
// the Candidate): with one optimizer step per RL step that is the pre-update policy, as DICE has
// it, where new = old and k3's gradient (1 - exp(ref - new)) is zero; with loss.ppo_epochs > 1 it
// stays the policy the step started from, for every pass. With phase_start, ref is a frozen copy
// of the weights the phase started with: once the policy has moved from them the term pulls it
// back from the first pass on.
#pragma once

#include <ATen/core/Tensor.h>

#include "options/learner_options.h"

namespace dice {

struct TraceTokenLoss {
  at::Tensor loss;     // [N] pg + beta * kl, differentiable in new_log_probs
  at::Tensor policy;   // [N] pg alone
  at::Tensor kl;       // [N] the KL estimate
  at::Tensor ratio;    // [N] exp(new - old), detached
  at::Tensor clipped;  // [N] bool: |ratio - 1| > eps (the clip range was left)
};

// new_log_probs, old_log_probs, advantages: [N] float32 (one entry per scored token).
// reference_log_probs: [N] the KL's reference (kl_reference phase_start); undefined: old.
TraceTokenLoss trace_token_loss(const at::Tensor& new_log_probs, const at::Tensor& old_log_probs,
                                const at::Tensor& advantages, const PolicyLossOptions& options,
                                const at::Tensor& reference_log_probs = at::Tensor());

}  // namespace dice
