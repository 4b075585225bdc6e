// The evaluation table's arithmetic (learner/eval_tally.h) against hand-computed cases.
#include "learner/eval_tally.h"

#include <gtest/gtest.h>

#include <cmath>

namespace dice {
namespace {

using S = EvalTally::Sample;

TEST(EvalTallyTest, FastPCountsCorrectAndFasterOverAllTasks) {
  EvalTally t;
  t.add_task("1", {{true, 3.0}}, 1);   // correct, 3x: fast_1 and fast_2
  t.add_task("1", {{true, 1.5}}, 1);   // correct, 1.5x: fast_1 only
  t.add_task("1", {{true, 0.5}}, 1);   // correct but slower: neither
  t.add_task("1", {{false, 9.0}}, 1);  // a wrong kernel's speedup never counts
  t.add_task("2", {}, 1);              // no verdict came: counted, not correct
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

TEST(EvalTallyTest, PassAtKLooksAtTheFirstKSamplesAndExecAtTheFirst) {
  EvalTally t;
  t.add_task("3", {{false, 0}, {true, 0}, {true, 0}}, 2);   // pass@2 yes, pass@1 no
  t.add_task("3", {{false, 0}, {false, 0}, {true, 0}}, 2);  // the third is past k
  const EvalCell& c = t.levels().at("3");
  EXPECT_EQ(c.correct, 0);
  EXPECT_EQ(c.pass_at_k, 1);
  EXPECT_DOUBLE_EQ(c.geo_mean_speedup(), 0.0);  // nothing correct was timed
}

TEST(EvalTallyTest, SummaryNamesEveryLevel) {
  EvalTally t;
  t.add_task("1", {{true, 2.5}}, 1);
  t.add_task("", {{false, 0}}, 1);
  EXPECT_EQ(t.summary(),
            "no level: exec 0.000 fast_1 0.000 fast_2 0.000 (1 tasks) | level 1: exec 1.000 "
            "fast_1 1.000 fast_2 1.000 (1 tasks) | all: exec 0.500 fast_1 0.500 fast_2 0.500 "
            "(2 tasks)");
}

}  // namespace
}  // namespace dice
