// tasks/answer_scoring.h: the noise check and pass@k against hand-computed values.
#include "tasks/answer_scoring.h"

#include <gtest/gtest.h>

namespace dice::eval {
namespace {

// A correct, timed answer: kernel K ms (sd sd_k), reference R ms (sd sd_r), n timed trials.
AnswerVerdict timed(double k, double sd_k, double r, double sd_r, int n) {
  AnswerVerdict a;
  a.judged = a.compiled = a.correct = a.rewarded = true;
  a.kernel_ms_mean = k;
  a.kernel_ms_std = sd_k;
  a.reference_ms_mean = r;
  a.reference_ms_std = sd_r;
  a.timing_trials = n;
  a.speedup = r / k;
  return a;
}

TEST(DiceEvalScoringTest, LowerBoundMatchesTheHandComputedRule) {
  // se(log K) = 0.1 / (1.0 * sqrt(100)) = 0.01, se(log R) = 0.12 / (1.2 * 10) = 0.01;
  // S_low = 1.2 * exp(-1.645 * sqrt(0.0002)) = 1.1724056...
  EXPECT_NEAR(speedup_lower_bound(timed(1.0, 0.1, 1.2, 0.12, 101), 1.645), 1.1724056, 1e-6);
  // Ten times the spread on 11 trials: se = 0.5 / sqrt(10) per side; S_low = 0.8306792.
  EXPECT_NEAR(speedup_lower_bound(timed(1.0, 0.5, 1.2, 0.6, 11), 1.645), 0.8306792, 1e-6);
  // z = 0: the speedup itself.
  EXPECT_NEAR(speedup_lower_bound(timed(1.0, 0.5, 1.2, 0.6, 11), 0), 1.2, 1e-12);
}

TEST(DiceEvalScoringTest, ASpeedupWithinTheNoiseIsNotFast) {
  const AnswerVerdict tight = timed(1.0, 0.1, 1.2, 0.12, 101);
  const AnswerVerdict noisy = timed(1.0, 0.5, 1.2, 0.6, 11);
  EXPECT_TRUE(counts_as_fast(tight, 1, kDefaultNoiseZ));
  EXPECT_FALSE(counts_as_fast(noisy, 1, kDefaultNoiseZ));
  EXPECT_TRUE(counts_as_fast_raw(noisy, 1));  // KernelBench's rule counts it
  EXPECT_TRUE(counts_as_fast(noisy, 1, 0));   // and so does z = 0
  // 2.5x with a tight spread: fast_2 (S_low = 2.4941616 > 2) but not beyond.
  const AnswerVerdict fast = timed(0.4, 0.004, 1.0, 0.01, 100);
  EXPECT_NEAR(speedup_lower_bound(fast, 1.645), 2.4941616, 1e-6);
  EXPECT_TRUE(counts_as_fast(fast, 2, kDefaultNoiseZ));
  EXPECT_FALSE(counts_as_fast(fast, 2.5, kDefaultNoiseZ));
}

TEST(DiceEvalScoringTest, AnUnboundedOrIncorrectAnswerIsNeverFast) {
  AnswerVerdict one_trial = timed(1.0, 0.0, 3.0, 0.0, 1);
  EXPECT_EQ(speedup_lower_bound(one_trial, kDefaultNoiseZ), 0.0);
  EXPECT_FALSE(counts_as_fast(one_trial, 1, kDefaultNoiseZ));
  EXPECT_TRUE(counts_as_fast(one_trial, 1, 0));  // z = 0 needs no spread
  AnswerVerdict untimed;
  untimed.judged = untimed.correct = true;
  EXPECT_FALSE(counts_as_fast(untimed, 1, 0));
  EXPECT_TRUE(counts_as_fast(untimed, 0, kDefaultNoiseZ));  // fast_0 is correctness
  AnswerVerdict wrong = timed(1.0, 0.0, 5.0, 0.0, 100);
  wrong.correct = false;
  EXPECT_FALSE(counts_as_fast(wrong, 0, kDefaultNoiseZ));
  EXPECT_FALSE(counts_as_fast(wrong, 1, 0));
  EXPECT_FALSE(counts_as_fast_raw(wrong, 1));
}

TEST(DiceEvalScoringTest, PassAtKIsTheUnbiasedEstimate) {
  EXPECT_NEAR(pass_at_k(5, 2, 1), 0.4, 1e-12);
  EXPECT_NEAR(pass_at_k(5, 2, 2), 0.7, 1e-12);  // 1 - C(3,2)/C(5,2) = 1 - 3/10
  EXPECT_NEAR(pass_at_k(5, 2, 3), 0.9, 1e-12);  // 1 - C(3,3)/C(5,3) = 1 - 1/10
  EXPECT_EQ(pass_at_k(5, 2, 4), 1.0);           // n - c < k: some draw holds a correct one
  EXPECT_NEAR(pass_at_k(10, 3, 5), 1.0 - 21.0 / 252.0, 1e-12);
  EXPECT_EQ(pass_at_k(4, 0, 2), 0.0);
  EXPECT_EQ(pass_at_k(1, 1, 1), 1.0);
  EXPECT_EQ(pass_at_k(3, 1, 4), 0.0);  // k > n: not defined
}

}  // namespace
}  // namespace dice::eval
