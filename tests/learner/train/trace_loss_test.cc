// The TraceRL token loss (learner/train/trace_loss.h) against values worked out by hand, with
// ratios away from 1 on both sides of the clip range and both signs of the advantage, and the k1,
// k2, k3 estimators at non-zero log-ratios. The gradients are checked too: a clipped term must give
// none through its policy part, an unclipped one exactly -ratio * A.
#include "learner/train/trace_loss.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace dice {
namespace {

struct Token {
  double ratio;      // new / old probability
  double advantage;  // A
  double policy;     // -min(r A, clip(r) A), by hand
  bool clipped;      // |r - 1| > eps
  bool pg_gradient;  // whether the min picks the unclipped (differentiable) term
};

// eps 0.2. Worked cases:
//   r 1.5, A +1: min(1.5, 1.2) = 1.2 (clipped term, no gradient)    -> -1.2
//   r 1.5, A -1: min(-1.5, -1.2) = -1.5 (unclipped, gradient)       ->  1.5
//   r 0.5, A +1: min(0.5, 0.8) = 0.5 (unclipped, gradient)          -> -0.5
//   r 0.5, A -1: min(-0.5, -0.8) = -0.8 (clipped term, no gradient) ->  0.8
//   r 1.1, A +2: inside the range, both 2.2                          -> -2.2
//   r 0.7, A 0:  no advantage, no policy term                        ->  0
const std::vector<Token> kTokens = {
    {1.5, 1.0, -1.2, true, false}, {1.5, -1.0, 1.5, true, true},  {0.5, 1.0, -0.5, true, true},
    {0.5, -1.0, 0.8, true, false}, {1.1, 2.0, -2.2, false, true}, {0.7, 0.0, 0.0, true, true},
};

struct Inputs {
  at::Tensor new_log_probs, old_log_probs, advantages;
};

Inputs inputs() {
  std::vector<double> old_lp, new_lp, adv;
  for (std::size_t i = 0; i < kTokens.size(); ++i) {
    const double old_value = -0.3 - 0.25 * static_cast<double>(i);  // any log-probs will do
    old_lp.push_back(old_value);
    new_lp.push_back(old_value + std::log(kTokens[i].ratio));
    adv.push_back(kTokens[i].advantage);
  }
  const auto f64 = at::TensorOptions().dtype(at::kDouble);
  return {at::tensor(new_lp, f64).set_requires_grad(true), at::tensor(old_lp, f64),
          at::tensor(adv, f64)};
}

PolicyLossOptions options(KlEstimator estimator, double beta) {
  PolicyLossOptions o;
  o.clip_eps = 0.2;
  o.kl_beta = beta;
  o.kl_estimator = estimator;
  return o;
}

TEST(TraceLossTest, ClippedAndUnclippedTermsAsWorkedByHand) {
  Inputs in = inputs();
  TraceTokenLoss out = trace_token_loss(in.new_log_probs, in.old_log_probs, in.advantages,
                                        options(KlEstimator::kK3, 0));
  for (std::size_t i = 0; i < kTokens.size(); ++i) {
    const auto t = static_cast<std::int64_t>(i);
    EXPECT_NEAR(out.policy[t].item<double>(), kTokens[i].policy, 1e-12) << "token " << i;
    EXPECT_NEAR(out.ratio[t].item<double>(), kTokens[i].ratio, 1e-12) << "token " << i;
    EXPECT_EQ(out.clipped[t].item<bool>(), kTokens[i].clipped) << "token " << i;
    // beta 0: the loss is the policy term alone.
    EXPECT_NEAR(out.loss[t].item<double>(), kTokens[i].policy, 1e-12) << "token " << i;
  }
  // d(-r A)/d(log pi_new) = -r A where the unclipped term is the min; 0 where the clipped is.
  out.loss.sum().backward();
  const at::Tensor grad = in.new_log_probs.grad();
  for (std::size_t i = 0; i < kTokens.size(); ++i) {
    const double expected = kTokens[i].pg_gradient ? -kTokens[i].ratio * kTokens[i].advantage : 0.0;
    EXPECT_NEAR(grad[static_cast<std::int64_t>(i)].item<double>(), expected, 1e-12)
        << "token " << i;
  }
}

TEST(TraceLossTest, KlEstimatorsAtNonZeroLogRatios) {
  // d = log r: k1 = d, k2 = d^2 / 2, k3 = 1/r + d - 1 (exp(-d) + d - 1).
  //   r 1.5: d = 0.405465, k3 = 0.666667 + 0.405465 - 1 = 0.072132
  //   r 0.5: d = -0.693147, k3 = 2 - 0.693147 - 1 = 0.306853
  const double beta = 0.1;
  for (KlEstimator estimator : {KlEstimator::kK1, KlEstimator::kK2, KlEstimator::kK3}) {
    Inputs in = inputs();
    TraceTokenLoss out = trace_token_loss(in.new_log_probs, in.old_log_probs, in.advantages,
                                          options(estimator, beta));
    out.loss.sum().backward();
    const at::Tensor grad = in.new_log_probs.grad();
    for (std::size_t i = 0; i < kTokens.size(); ++i) {
      const auto t = static_cast<std::int64_t>(i);
      const double r = kTokens[i].ratio, d = std::log(r);
      double kl = 0, dkl = 0;  // the estimate and its derivative in log pi_new
      switch (estimator) {
        case KlEstimator::kK1:
          kl = d, dkl = 1;
          break;
        case KlEstimator::kK2:
          kl = 0.5 * d * d, dkl = d;
          break;
        case KlEstimator::kK3:
          kl = 1 / r + d - 1, dkl = 1 - 1 / r;
          break;
      }
      EXPECT_NEAR(out.kl[t].item<double>(), kl, 1e-12) << "token " << i;
      EXPECT_NEAR(out.loss[t].item<double>(), kTokens[i].policy + beta * kl, 1e-12)
          << "token " << i;
      const double pg = kTokens[i].pg_gradient ? -r * kTokens[i].advantage : 0.0;
      EXPECT_NEAR(grad[t].item<double>(), pg + beta * dkl, 1e-12) << "token " << i;
    }
  }
  // The two k3 values worked above, as numbers.
  Inputs in = inputs();
  TraceTokenLoss k3 = trace_token_loss(in.new_log_probs, in.old_log_probs, in.advantages,
                                       options(KlEstimator::kK3, beta));
  EXPECT_NEAR(k3.kl[0].item<double>(), 0.0721318, 1e-6);
  EXPECT_NEAR(k3.kl[2].item<double>(), 0.3068528, 1e-6);
}

// On the first PPO pass the policy is the one that sampled: new = old, ratio 1. Against that
// sampling policy k3 and its gradient are zero there, so the KL term ties nothing; against a
// reference the policy has moved from (kl_reference phase_start) the gradient is
// beta * (1 - exp(ref - new)) per token, pulling each log-prob back towards the reference's.
TEST(TraceLossTest, AReferenceTheSamplerMovedFromGivesTheKlAGradientAtRatioOne) {
  const auto f64 = at::TensorOptions().dtype(at::kDouble);
  const std::vector<double> current = {-0.5, -1.2, -2.0};
  const std::vector<double> reference = {-0.9, -0.7, -2.0};  // moved up, down, not at all
  const double beta = 0.1;
  for (bool with_reference : {false, true}) {
    SCOPED_TRACE(with_reference ? "phase_start reference" : "sampling reference");
    at::Tensor new_lp = at::tensor(current, f64).set_requires_grad(true);
    TraceTokenLoss out = trace_token_loss(
        new_lp, at::tensor(current, f64), at::zeros({3}, f64), options(KlEstimator::kK3, beta),
        with_reference ? at::tensor(reference, f64) : at::Tensor());
    out.loss.sum().backward();
    for (std::int64_t t = 0; t < 3; ++t) {
      const auto i = static_cast<std::size_t>(t);
      EXPECT_NEAR(out.ratio[t].item<double>(), 1.0, 1e-12);
      const double d = with_reference ? current[i] - reference[i] : 0.0;
      EXPECT_NEAR(out.kl[t].item<double>(), std::exp(-d) + d - 1, 1e-12) << "token " << t;
      EXPECT_NEAR(new_lp.grad()[t].item<double>(), beta * (1 - std::exp(-d)), 1e-12)
          << "token " << t;
    }
    const double norm = new_lp.grad().abs().sum().item<double>();
    if (with_reference) {
      EXPECT_GT(norm, 0.01);
      // Moved up from the reference: pushed down (positive gradient of the loss), and back.
      EXPECT_GT(new_lp.grad()[0].item<double>(), 0.0);
      EXPECT_LT(new_lp.grad()[1].item<double>(), 0.0);
    } else {
      EXPECT_EQ(norm, 0.0);
    }
  }
}

}  // namespace
}  // namespace dice
