// SampleCarry (learner.min_mixed_samples): a step with fewer samples than the minimum trains
// nothing and its samples go into the next step's update, ahead of that step's own; the phase's
// last step trains on whatever is waiting; minimum 0 is every step on its own (DICE's loop).
#include "learner/step/sample_carry.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace dice {
namespace {

// `n` samples tagged with step `step` (in policy_version) and their index (in advantage).
std::vector<TraceSample> samples_of(std::uint64_t step, int n) {
  std::vector<TraceSample> out(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) {
    out[static_cast<std::size_t>(i)].policy_version = step;
    out[static_cast<std::size_t>(i)].advantage = i;
  }
  return out;
}

// "step.index" of each sample, in order.
std::string tags(const std::vector<TraceSample>& samples) {
  std::string out;
  for (const TraceSample& s : samples) {
    out += (out.empty() ? "" : " ") + std::to_string(s.policy_version) + "." +
           std::to_string(static_cast<int>(s.advantage));
  }
  return out;
}

TEST(SampleCarryTest, AStepWithTooFewSamplesWaitsForTheNextStepsUpdate) {
  SampleCarry carry(5);
  EXPECT_TRUE(carry.take(samples_of(0, 3), false).empty());  // 3 < 5: no update
  EXPECT_EQ(carry.carried(), 3u);
  EXPECT_EQ(tags(carry.take(samples_of(1, 2), false)), "0.0 0.1 0.2 1.0 1.1");
  EXPECT_EQ(carry.carried(), 0u);
  EXPECT_TRUE(carry.take({}, false).empty());  // a step with no mixed group at all
  EXPECT_EQ(tags(carry.take(samples_of(3, 6), false)), "3.0 3.1 3.2 3.3 3.4 3.5");
  EXPECT_TRUE(carry.take(samples_of(4, 1), false).empty());
  EXPECT_TRUE(carry.take(samples_of(5, 1), false).empty());
  EXPECT_EQ(carry.carried(), 2u);
  // The phase's last step trains on what is waiting: nothing crosses into the next phase.
  EXPECT_EQ(tags(carry.take(samples_of(6, 1), true)), "4.0 5.0 6.0");
  EXPECT_EQ(carry.carried(), 0u);
}

TEST(SampleCarryTest, MinimumZeroTrainsEveryStepOnItsOwn) {
  SampleCarry carry(0);
  EXPECT_EQ(tags(carry.take(samples_of(0, 1), false)), "0.0");
  EXPECT_TRUE(carry.take({}, false).empty());
  EXPECT_EQ(carry.carried(), 0u);
}

}  // namespace
}  // namespace dice
