// The keep/drop rule of dice-data build-sft (tools/dice-data/keep_rule.h) on verdict lines in the
// pipeline's own format: kept only when the noise-checked lower bound of the speedup reaches the
// threshold, whatever the raw ratio says.
#include "tools/dice-data/keep_rule.h"

#include <gtest/gtest.h>

#include "tests/tools/dice_data_pair_judge_test_double.h"

namespace dice::data {
namespace {

using testing::failed;
using testing::timed;
using testing::verdict_line;
using testing::VerdictSpec;

Decision decision_of(const VerdictSpec& spec, KeepRule rule = {}) {
  auto v = parse_pair_verdict(verdict_line("p", spec), "test");
  EXPECT_TRUE(v.ok()) << v.status().to_string();
  return v.ok() ? decide(*v, rule) : Decision{};
}

TEST(DiceDataKeepRuleTest, AFastKernelWithATightSpreadIsKept) {
  // 2.5x, 1% spreads over 99 trials: S_low = 2.5 * exp(-1.645 * sqrt(2) * 0.01 / sqrt(98)).
  const Decision d = decision_of(timed(0.4, 0.004, 1.0, 0.01));
  EXPECT_EQ(d.outcome, "kept");
  EXPECT_TRUE(d.kept);
  EXPECT_TRUE(d.timed);
  EXPECT_NEAR(d.speedup, 2.5, 1e-5);
  EXPECT_NEAR(d.speedup_low, 2.5 * std::exp(-1.645 * std::sqrt(2.0) * 0.01 / std::sqrt(98.0)),
              1e-4);
}

TEST(DiceDataKeepRuleTest, LaunchOverheadNoisePassesRawButNotTheBound) {
  // A tiny kernel (4 us) whose timings spread five times its mean, as launch overhead and a busy
  // GPU make them: the means say 2.5x, the noise check says it could be 1.1x.
  const VerdictSpec noisy = timed(0.004, 0.02, 0.01, 0.002);
  const Decision d = decision_of(noisy);
  EXPECT_NEAR(d.speedup, 2.5, 1e-4);
  EXPECT_LT(d.speedup_low, 2.0);
  EXPECT_GT(d.speedup_low, 0.0);
  EXPECT_EQ(d.outcome, "noisy");
  EXPECT_FALSE(d.kept);
  // The bound is dice-eval's own rule, not a second one.
  auto v = parse_pair_verdict(verdict_line("p", noisy), "test");
  ASSERT_TRUE(v.ok());
  EXPECT_DOUBLE_EQ(d.speedup_low, eval::speedup_lower_bound(v->answer, eval::kDefaultNoiseZ));
  EXPECT_TRUE(eval::counts_as_fast_raw(v->answer, 2.0));  // KernelBench's plain rule keeps it
}

TEST(DiceDataKeepRuleTest, TheThresholdAndZAreTheRulesOwn) {
  const VerdictSpec fast = timed(0.4, 0.004, 1.0, 0.01);
  const double low = decision_of(fast).speedup_low;
  // At the bound exactly: kept ("at or above").
  EXPECT_TRUE(decision_of(fast, KeepRule{low, eval::kDefaultNoiseZ}).kept);
  EXPECT_EQ(decision_of(fast, KeepRule{2.497, eval::kDefaultNoiseZ}).outcome, "noisy");
  EXPECT_EQ(decision_of(fast, KeepRule{3.0, eval::kDefaultNoiseZ}).outcome, "slow");
  // A larger z widens the interval: the noisy kernel is further off.
  const VerdictSpec noisy = timed(0.004, 0.02, 0.01, 0.002);
  EXPECT_LT(decision_of(noisy, KeepRule{2.0, 3.0}).speedup_low,
            decision_of(noisy, KeepRule{2.0, 1.0}).speedup_low);
}

TEST(DiceDataKeepRuleTest, EveryOtherOutcome) {
  EXPECT_EQ(decision_of(timed(1.0, 0.01, 1.5, 0.01)).outcome, "slow");
  // Correct, but not timed (timing off), or one timed trial: its noise cannot be bounded.
  VerdictSpec untimed;
  EXPECT_EQ(decision_of(untimed).outcome, "untimed");
  EXPECT_EQ(decision_of(timed(0.1, 0, 1.0, 0, 1)).outcome, "untimed");
  EXPECT_FALSE(decision_of(timed(0.1, 0, 1.0, 0, 1)).kept);
  // Incorrect, and not compiled: the failure class.
  const Decision wrong = decision_of(failed(schema::FailureClass::INCORRECT, true));
  EXPECT_EQ(wrong.outcome, "incorrect");
  EXPECT_FALSE(wrong.kept || wrong.timed);
  EXPECT_EQ(decision_of(failed(schema::FailureClass::COMPILE_ERROR, false)).outcome,
            "compileError");
  EXPECT_EQ(decision_of(failed(schema::FailureClass::STATIC_CHECK, false)).outcome, "staticCheck");
  // Correct and fast, but a fatal finding zeroed the reward.
  VerdictSpec hacked = timed(0.1, 0.001, 1.0, 0.01);
  hacked.fatal_finding = true;
  EXPECT_EQ(decision_of(hacked).outcome, "zeroReward");
  // Only screened (no GPU): nothing measured.
  VerdictSpec screened;
  screened.compiled = screened.correct = false;
  screened.screened = true;
  EXPECT_EQ(decision_of(screened).outcome, "unmeasured");
}

TEST(DiceDataKeepRuleTest, ReadsVerdictLines) {
  auto v = parse_pair_verdict(
      R"({"id": 12, "compiled": true, "correct": true, "failure": "none", "reward": 1,
          "findings": [], "speedup": 3, "kernel_ms": 0.5, "reference_ms": 1.5,
          "kernel_ms_std": 0.01, "reference_ms_std": 0.02, "timing_trials": 99,
          "pair_hash": "abc"})",
      "v.jsonl: line 1");
  ASSERT_TRUE(v.ok()) << v.status().to_string();
  EXPECT_EQ(v->id, "12");
  EXPECT_EQ(v->pair_hash, "abc");
  EXPECT_DOUBLE_EQ(v->answer.speedup, 3);
  EXPECT_EQ(v->answer.timing_trials, 99);
  EXPECT_DOUBLE_EQ(v->answer.reference_ms_std, 0.02);
  // An untimed line: null speedup reads as none.
  v = parse_pair_verdict(verdict_line("x", failed(schema::FailureClass::INCORRECT, true)), "t");
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(v->answer.speedup, 0);
  EXPECT_EQ(v->failure, "incorrect");

  for (const char* bad : {"[1]", "{\"correct\": true}", "{\"id\": "}) {
    auto r = parse_pair_verdict(bad, "v.jsonl: line 7");
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.status().message().find("v.jsonl: line 7"), std::string::npos)
        << r.status().message();
  }
}

}  // namespace
}  // namespace dice::data
