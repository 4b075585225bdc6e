#include "reward/reward_policy.h"

#include <gtest/gtest.h>

namespace dice {
namespace {

TEST(RewardPolicyTest, BinaryNeedsCompiledAndCorrect) {
  RewardPolicyOptions binary;
  EXPECT_EQ(compute_reward(binary, {true, true, 0, false}), 1.0f);
  EXPECT_EQ(compute_reward(binary, {true, false, 0, false}), 0.0f);
  EXPECT_EQ(compute_reward(binary, {false, true, 0, false}), 0.0f);
  EXPECT_EQ(compute_reward(binary, {false, false, 0, false}), 0.0f);
}

TEST(RewardPolicyTest, BinaryIgnoresSpeed) {
  RewardPolicyOptions binary;
  EXPECT_EQ(compute_reward(binary, {true, true, 0.1, false}), 1.0f);
}

TEST(RewardPolicyTest, FatalFindingZeroes) {
  RewardPolicyOptions binary;
  EXPECT_EQ(compute_reward(binary, {true, true, 3.0, true}), 0.0f);
}

TEST(RewardPolicyTest, SpeedupThreshold) {
  RewardPolicyOptions p;
  p.kind = RewardPolicy::kSpeedupThreshold;
  p.min_speedup = 1.5;
  EXPECT_EQ(compute_reward(p, {true, true, 1.5, false}), 1.0f);
  EXPECT_EQ(compute_reward(p, {true, true, 2.0, false}), 1.0f);
  EXPECT_EQ(compute_reward(p, {true, true, 1.49, false}), 0.0f);
  EXPECT_EQ(compute_reward(p, {true, true, 0, false}), 0.0f);  // not timed
  EXPECT_EQ(compute_reward(p, {true, false, 9.0, false}), 0.0f);
}

}  // namespace
}  // namespace dice
