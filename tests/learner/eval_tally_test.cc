// The evaluation table's arithmetic (learner/eval_tally.h) against hand-computed cases.
#include "learner/eval_tally.h"

#include <gtest/gtest.h>

#include <cmath>

namespace dice {
namespace {

using S = EvalTally::Sample;

// A verdict whose speedup was timed over 20 trials with a spread of `spread` (a share of each
// mean); 0 speedup: not timed.
S answer(bool correct, double speedup, double spread = 0.01) {
  S s;
  s.judged = true;
  s.compiled = true;
  s.correct = correct;
  s.speedup = speedup;
  if (speedup > 0) {
    s.timing_trials = 20;
    s.reference_ms_mean = speedup;
    s.kernel_ms_mean = 1.0;
    s.reference_ms_std = spread * speedup;
    s.kernel_ms_std = spread;
  }
  return s;
}

TEST(EvalTallyTest, FastPCountsCorrectAndFasterOverAllTasks) {
  EvalTally t;
  t.add_task("1", {answer(true, 3.0)}, 1);   // correct, 3x: fast_1 and fast_2
  t.add_task("1", {answer(true, 1.5)}, 1);   // correct, 1.5x: fast_1 only
  t.add_task("1", {answer(true, 0.5)}, 1);   // correct but slower: neither
  t.add_task("1", {answer(false, 9.0)}, 1);  // a wrong kernel's speedup never counts
  t.add_task("2", {}, 1);                    // no verdict came: counted, not correct
  const EvalCell& one = t.levels().at("1");
  EXPECT_EQ(one.tasks, 4);
  EXPECT_DOUBLE_EQ(one.exec(), 0.75);
  EXPECT_DOUBLE_EQ(one.fast(0), 0.75);
  EXPECT_DOUBLE_EQ(one.fast(1), 0.5);
  EXPECT_DOUBLE_EQ(one.fast(2), 0.25);
  EXPECT_NEAR(one.geo_mean_speedup(), std::cbrt(3.0 * 1.5 * 0.5), 1e-12);
  EXPECT_DOUBLE_EQ(t.levels().at("2").exec(), 0.0);
  EXPECT_EQ(t.all().tasks, 5);
  EXPECT_DOUBLE_EQ(t.all().exec(), 0.6);
  EXPECT_DOUBLE_EQ(t.all().fast(1), 0.4);
}

// The in-run table counts a speedup as dice-eval does (tasks/answer_scoring.h): 1.1x with a 40 %
// spread over 20 trials has a lower bound under 1 and is not fast_1, unless z is 0 (KernelBench's
// plain rule); a speedup whose spread was never measured is not fast either.
TEST(EvalTallyTest, AFastKernelMustBeFastBeyondItsTimingNoise) {
  EvalTally checked;  // z 1.645
  EvalTally plain(0.0);
  for (EvalTally* t : {&checked, &plain}) {
    t->add_task("1", {answer(true, 1.1, 0.4)}, 1);
    t->add_task("1", {answer(true, 1.1, 0.01)}, 1);
    S untimed_spread = answer(true, 2.5);
    untimed_spread.timing_trials = 1;
    t->add_task("1", {untimed_spread}, 1);
  }
  EXPECT_EQ(checked.all().fast_1, 1);  // only the tight 1.1x
  EXPECT_EQ(checked.all().fast_2, 0);
  EXPECT_EQ(plain.all().fast_1, 3);
  EXPECT_EQ(plain.all().fast_2, 1);
}

TEST(EvalTallyTest, PassAtKLooksAtTheFirstKSamplesAndExecAtTheFirst) {
  EvalTally t;
  t.add_task("3", {answer(false, 0), answer(true, 0), answer(true, 0)}, 2);   // pass@2, not @1
  t.add_task("3", {answer(false, 0), answer(false, 0), answer(true, 0)}, 2);  // the third: past k
  const EvalCell& c = t.levels().at("3");
  EXPECT_EQ(c.correct, 0);
  EXPECT_EQ(c.pass_at_k, 1);
  EXPECT_DOUBLE_EQ(c.geo_mean_speedup(), 0.0);  // nothing correct was timed
}

// A pool evaluation: pass@1 is each task's share of correct samples, averaged over tasks, where
// Exec looks only at the first sample.
TEST(EvalTallyTest, PassAt1CountsEverySampleOfATask) {
  EvalTally t;
  const S no = answer(false, 0), yes = answer(true, 0);
  t.add_task("1", {no, yes, yes, yes}, 4);   // 3 of 4; Exec: not correct
  t.add_task("1", {yes, yes, yes, yes}, 4);  // 4 of 4
  t.add_task("1", {no, no, no, no}, 4);      // 0 of 4
  t.add_task("1", {}, 4);                    // no verdict came: 0, and counted
  const EvalCell& c = t.levels().at("1");
  EXPECT_EQ(c.correct, 1);
  EXPECT_DOUBLE_EQ(c.pass_at_1(), (0.75 + 1.0 + 0.0 + 0.0) / 4);
  EXPECT_EQ(c.samples, 12);
  EXPECT_EQ(c.most_samples, 4);
  // Shares .75, 1, 0, 0: sample variance (1.5625 - 4 * .4375^2) / 3 = .2656; 1.96 sqrt(.2656 / 4).
  EXPECT_NEAR(c.pass_at_1_half_width(), 1.96 * std::sqrt(0.265625 / 4), 1e-12);
  EXPECT_NE(t.summary().find("all: exec 0.250 fast_1 0.000 fast_2 0.000 (4 tasks) pass@1 0.438 "
                             "+-0.505 (4 samples a task)"),
            std::string::npos)
      << t.summary();

  EvalTally one;  // one task: no spread to speak of
  one.add_task("1", {yes, no}, 2);
  EXPECT_DOUBLE_EQ(one.all().pass_at_1(), 0.5);
  EXPECT_DOUBLE_EQ(one.all().pass_at_1_half_width(), 0.0);
}

TEST(EvalTallyTest, SummaryNamesEveryLevel) {
  EvalTally t;
  t.add_task("1", {answer(true, 2.5)}, 1);
  t.add_task("", {answer(false, 0)}, 1);
  EXPECT_EQ(t.summary(),
            "no level: exec 0.000 fast_1 0.000 fast_2 0.000 (1 tasks) | level 1: exec 1.000 "
            "fast_1 1.000 fast_2 1.000 (1 tasks) | all: exec 0.500 fast_1 0.500 fast_2 0.500 "
            "(2 tasks)");
}

}  // namespace
}  // namespace dice
