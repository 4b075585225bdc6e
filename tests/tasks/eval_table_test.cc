// tasks/eval_table.h: the table's arithmetic against hand-computed cases, one meaning for the
// learner's in-run evaluation and dice-eval (tests/tools/dice_eval_table_test.cc: its rows by
// kind and level).
#include "tasks/eval_table.h"

#include <gtest/gtest.h>

#include <cmath>

namespace dice::eval {
namespace {

// A verdict whose speedup was timed over 20 trials with a spread of `spread` (a share of each
// mean); 0 speedup: not timed.
AnswerVerdict answer(bool correct, double speedup, double spread = 0.01) {
  AnswerVerdict a;
  a.judged = true;
  a.compiled = true;
  a.correct = correct;
  a.speedup = speedup;
  if (speedup > 0) {
    a.timing_trials = 20;
    a.reference_ms_mean = speedup;
    a.kernel_ms_mean = 1.0;
    a.reference_ms_std = spread * speedup;
    a.kernel_ms_std = spread;
  }
  return a;
}

TEST(EvalTableTest, FastPCountsCorrectAndFasterOverAllTasks) {
  EvalTally t;
  t.add_task("1", {answer(true, 3.0)});   // correct, 3x: fast_1 and fast_2
  t.add_task("1", {answer(true, 1.5)});   // correct, 1.5x: fast_1 only
  t.add_task("1", {answer(true, 0.5)});   // correct but slower: neither
  t.add_task("1", {answer(false, 9.0)});  // a wrong kernel's speedup never counts
  t.add_task("2", {});                    // no verdict came: counted, not correct
  const TableCell one = t.levels().at("1");
  EXPECT_EQ(one.problems, 4);
  EXPECT_DOUBLE_EQ(one.exec, 0.75);
  EXPECT_DOUBLE_EQ(one.fast_0, 0.75);
  EXPECT_DOUBLE_EQ(one.fast_1, 0.5);
  EXPECT_DOUBLE_EQ(one.fast_2, 0.25);
  EXPECT_NEAR(one.geo_mean_speedup, std::cbrt(3.0 * 1.5 * 0.5), 1e-12);
  EXPECT_EQ(one.incomplete, 0);
  const TableCell two = t.levels().at("2");
  EXPECT_DOUBLE_EQ(two.exec, 0.0);
  EXPECT_EQ(two.incomplete, 1);
  EXPECT_EQ(t.all().problems, 5);
  EXPECT_DOUBLE_EQ(t.all().exec, 0.6);
  EXPECT_DOUBLE_EQ(t.all().fast_1, 0.4);
}

// A speedup counts as tasks/answer_scoring.h says: 1.1x with a 40 % spread over 20 trials has a
// lower bound under 1 and is not fast_1, unless z is 0 (KernelBench's plain rule); a speedup
// whose spread was never measured is not fast either.
TEST(EvalTableTest, AFastKernelMustBeFastBeyondItsTimingNoise) {
  EvalTally checked;  // z 1.645
  EvalTally plain({1, {}, 0.0});
  for (EvalTally* t : {&checked, &plain}) {
    t->add_task("1", {answer(true, 1.1, 0.4)});
    t->add_task("1", {answer(true, 1.1, 0.01)});
    AnswerVerdict untimed_spread = answer(true, 2.5);
    untimed_spread.timing_trials = 1;
    t->add_task("1", {untimed_spread});
  }
  EXPECT_DOUBLE_EQ(checked.all().fast_1, 1.0 / 3);  // only the tight 1.1x
  EXPECT_DOUBLE_EQ(checked.all().fast_2, 0.0);
  EXPECT_EQ(checked.all().noise_rejected_1, 2);
  EXPECT_DOUBLE_EQ(plain.all().fast_1, 1.0);
  EXPECT_DOUBLE_EQ(plain.all().fast_2, 1.0 / 3);
}

// Several samples a task: every rate is the mean of each task's share of its n samples (a
// missing sample counts as wrong), not the first sample's; pass@k is the unbiased estimate.
TEST(EvalTableTest, SeveralSamplesGiveMeanRatesAndPassAtK) {
  EvalTally t({4, {1, 2}, kDefaultNoiseZ});
  const AnswerVerdict no = answer(false, 0), yes = answer(true, 0);
  t.add_task("1", {no, yes, yes, yes});   // 3 of 4; its first sample is wrong
  t.add_task("1", {yes, yes, yes, yes});  // 4 of 4
  t.add_task("1", {no, no, no, no});      // 0 of 4
  t.add_task("1", {no, yes});             // 1 of 4: two samples missing
  const TableCell c = t.all();
  EXPECT_DOUBLE_EQ(c.exec, (0.75 + 1.0 + 0.0 + 0.25) / 4);
  EXPECT_DOUBLE_EQ(c.pass_at_k.at(1), c.exec);
  // pass@2: 1 - C(4 - c, 2) / C(4, 2): 1, 1, 0, 1 - 3/6.
  EXPECT_NEAR(c.pass_at_k.at(2), (1.0 + 1.0 + 0.0 + 0.5) / 4, 1e-12);
  EXPECT_EQ(c.answers, 14);
  EXPECT_EQ(c.incomplete, 1);
  EXPECT_DOUBLE_EQ(c.geo_mean_speedup, 0.0);  // nothing correct was timed
  // Shares .75, 1, 0, .25: sample variance (1.625 - 4 * .5^2) / 3 = .2083; 1.96 sqrt(.2083 / 4).
  EXPECT_NEAR(c.exec_half_width, 1.96 * std::sqrt((1.625 - 1.0) / 3 / 4), 1e-12);

  EvalTally one({2, {}, kDefaultNoiseZ});  // one task: no spread to speak of
  one.add_task("1", {yes, no});
  EXPECT_DOUBLE_EQ(one.all().exec, 0.5);
  EXPECT_DOUBLE_EQ(one.all().exec_half_width, 0.0);
}

TEST(EvalTableTest, AnUnjudgedSampleCountsAsMissing) {
  EvalTally t({2, {}, kDefaultNoiseZ});
  AnswerVerdict unjudged = answer(true, 2.0);
  unjudged.judged = false;  // e.g. a service fault: its verdict says nothing
  t.add_task("", {answer(true, 0), unjudged});
  EXPECT_DOUBLE_EQ(t.all().exec, 0.5);
  EXPECT_EQ(t.all().answers, 1);
  EXPECT_EQ(t.all().incomplete, 1);
  EXPECT_EQ(t.all().timed, 0);
}

}  // namespace
}  // namespace dice::eval
