// The rules that turn one answer's verdict into the table's counts (KernelBench's semantics,
// REFERENCE.md section 4), and pass@k.
//
// Correct: the reward service's verdict (compiled, and every correctness trial matched the
// PyTorch reference). Only reward.mode full judges correctness; in the other modes no answer is
// correct, and the table says so (table_writers.h).
//
// Fast by more than p, with a noise check. The reward service times a correct kernel by the
// judge's clock (warm-ups, then `timingTrials` timed rounds of back-to-back calls on fresh
// inputs, the GPU to itself, the reference timed once the candidate's processes are gone;
// docs/SECURITY.md, "Timing that belongs to the kernel") and reports the mean and (population)
// standard deviation over the rounds of the kernel's and the reference's milliseconds a call.
// The speedup S = R / K (R, K: the reference's and the kernel's mean) is a ratio of two sample
// means, so it carries their noise. dice-eval counts an answer as faster than p only when the
// one-sided lower confidence bound of S exceeds p:
//
//   se(log K) = sd_K / (K * sqrt(n - 1))        (sd_K * sqrt(n / (n - 1)): the sample standard
//   se(log R) = sd_R / (R * sqrt(n - 1))         deviation; / sqrt(n): the standard error of the
//                                                mean; / K: of its log, by the delta method)
//   S_low     = S * exp(-z * sqrt(se(log K)^2 + se(log R)^2))
//   fast_p    counts the answer  iff  correct  and  S_low > p
//
// with z = 1.645 by default (one-sided 95%: a speedup that is noise passes at most ~5% of the
// time). An answer whose noise cannot be bounded (fewer than 2 timed trials, a mean of 0, no
// timing) does not count as fast for any p > 0. z = 0 is KernelBench's plain rule: S > p.
// fast_0 is the correct rate (KernelBench: a correct kernel always has S > 0).
//
// The rule is its own library (dice_eval_scoring), below the learner and the tools: dice-eval's
// table, the learner's in-run evaluation (learner/run/eval_summary.h) and dice-data build-sft (an
// SFT pair is kept only when speedup_lower_bound reaches its threshold) cannot judge a speedup
// apart.
#pragma once

namespace dice::eval {

// What the table reads of one answer's verdict (schemas/verdict.capnp: Verdict, Timings).
struct AnswerVerdict {
  bool judged = false;    // a verdict exists; false: the answer was never judged (missing)
  bool compiled = false;  // Verdict.compiled
  bool correct = false;   // Verdict.correct
  bool rewarded = false;  // Verdict.reward > 0: outside reward.mode full, all a verdict says
  double speedup = 0;     // Verdict.speedup: reference mean / kernel mean; 0 when not timed
  double kernel_ms_mean = 0, kernel_ms_std = 0;
  double reference_ms_mean = 0, reference_ms_std = 0;
  int timing_trials = 0;
};

// The default z of the noise check: one-sided 95%.
inline constexpr double kDefaultNoiseZ = 1.645;

// S_low above; 0 when the verdict has no speedup, and when z > 0 and the noise cannot be bounded
// (fewer than 2 trials, a non-positive mean). With z == 0, the speedup itself.
double speedup_lower_bound(const AnswerVerdict& verdict, double z);

// Whether the answer counts toward fast_p: correct and speedup_lower_bound > p (p > 0); for
// p <= 0, correct.
bool counts_as_fast(const AnswerVerdict& verdict, double p, double z);

// KernelBench's rule without the noise check: correct and speedup > p.
bool counts_as_fast_raw(const AnswerVerdict& verdict, double p);

// The unbiased pass@k of a problem with n answers of which c are correct (Chen et al. 2021):
// 1 - C(n - c, k) / C(n, k); 1 when n - c < k. Requires 1 <= k <= n and 0 <= c <= n (else 0).
double pass_at_k(int n, int c, int k);

}  // namespace dice::eval
