// learner/run/eval_summary.h: an eval phase's table as the log line dice-cluster wait reads back.
#include "learner/run/eval_summary.h"

#include <gtest/gtest.h>

namespace dice {
namespace {

eval::AnswerVerdict answer(bool correct, double speedup = 0) {
  eval::AnswerVerdict a;
  a.judged = a.compiled = true;
  a.correct = correct;
  a.speedup = speedup;
  if (speedup > 0) {  // timed tightly: 20 trials, 1% spread
    a.timing_trials = 20;
    a.reference_ms_mean = speedup;
    a.kernel_ms_mean = 1.0;
    a.reference_ms_std = 0.01 * speedup;
    a.kernel_ms_std = 0.01;
  }
  return a;
}

TEST(EvalSummaryTest, OneCellPerLevelThenAll) {
  eval::EvalTally t;
  t.add_task("1", {answer(true, 2.5)});
  t.add_task("", {answer(false)});
  EXPECT_EQ(eval_summary(t),
            "no level: exec 0.000 fast_1 0.000 fast_2 0.000 (1 tasks) | level 1: exec 1.000 "
            "fast_1 1.000 fast_2 1.000 (1 tasks) | all: exec 0.500 fast_1 0.500 fast_2 0.500 "
            "(2 tasks)");
}

// A pool evaluation: exec is pass@1, each task's share of correct samples averaged over tasks;
// the cell adds its interval over tasks.
TEST(EvalSummaryTest, SeveralSamplesATaskAddPassAt1AndItsInterval) {
  eval::EvalTally t({4, {}, eval::kDefaultNoiseZ});
  const auto no = answer(false), yes = answer(true);
  t.add_task("1", {no, yes, yes, yes});   // 3 of 4
  t.add_task("1", {yes, yes, yes, yes});  // 4 of 4
  t.add_task("1", {no, no, no, no});      // 0 of 4
  t.add_task("1", {});                    // no verdict came: 0, and counted
  // Shares .75, 1, 0, 0: mean .4375, sample variance .2656, 1.96 sqrt(.2656 / 4) = .505.
  EXPECT_NE(eval_summary(t).find("all: exec 0.438 fast_1 0.000 fast_2 0.000 (4 tasks) pass@1 "
                                 "0.438 +-0.505 (4 samples a task)"),
            std::string::npos)
      << eval_summary(t);
}

}  // namespace
}  // namespace dice
