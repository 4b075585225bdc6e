#include "learner/step/advantage.h"

#include <gtest/gtest.h>

#include <cmath>

namespace dice {
namespace {

TEST(AdvantageTest, ZScoresWithPopulationStd) {
  // rewards 1,0,0,0: mean 0.25, population std sqrt(3)/4.
  GroupAdvantages a = group_advantages({1, 0, 0, 0}, true);
  const double std = std::sqrt(3.0) / 4.0;
  EXPECT_DOUBLE_EQ(a.mean, 0.25);
  EXPECT_DOUBLE_EQ(a.std, std);
  EXPECT_FALSE(a.constant);
  EXPECT_FALSE(a.dropped);
  ASSERT_EQ(a.advantages.size(), 4u);
  EXPECT_NEAR(a.advantages[0], 0.75 / (std + kAdvantageEpsilon), 1e-12);
  EXPECT_NEAR(a.advantages[1], -0.25 / (std + kAdvantageEpsilon), 1e-12);
  double sum = 0;
  for (double x : a.advantages) sum += x;
  EXPECT_NEAR(sum, 0.0, 1e-9);
}

TEST(AdvantageTest, SignsFollowRewards) {
  GroupAdvantages a = group_advantages({1, 0}, true);
  EXPECT_GT(a.advantages[0], 0.99);
  EXPECT_LT(a.advantages[1], -0.99);
}

TEST(AdvantageTest, ConstantGroupIsDroppedWhenAsked) {
  for (double r : {0.0, 1.0}) {
    GroupAdvantages dropped = group_advantages({r, r, r}, true);
    EXPECT_TRUE(dropped.constant);
    EXPECT_TRUE(dropped.dropped);
    for (double x : dropped.advantages) EXPECT_EQ(x, 0.0);

    GroupAdvantages kept = group_advantages({r, r, r}, false);
    EXPECT_TRUE(kept.constant);
    EXPECT_FALSE(kept.dropped);
    for (double x : kept.advantages) EXPECT_EQ(x, 0.0);
  }
}

TEST(AdvantageTest, EpsilonBoundsTinySpreads) {
  GroupAdvantages a = group_advantages({0.0, 1e-9}, true, 1e-6);
  EXPECT_FALSE(a.constant);
  EXPECT_LT(std::abs(a.advantages[1]), 1e-3);  // not blown up to +1
}

TEST(AdvantageTest, EmptyAndSingleGroupsAreConstant) {
  EXPECT_TRUE(group_advantages({}, true).dropped);
  GroupAdvantages one = group_advantages({1.0}, true);
  EXPECT_TRUE(one.constant);
  EXPECT_TRUE(one.dropped);
  EXPECT_EQ(one.advantages.size(), 1u);
}

}  // namespace
}  // namespace dice
