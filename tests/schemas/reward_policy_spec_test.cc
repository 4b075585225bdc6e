// A phase's reward policy on the wire (net/wire/reward_policy_spec.h): what the learner sets on a
// Task is what the reward worker rewards by, and a task without one, or with one this build
// cannot apply, gets the service's own.
#include "net/wire/reward_policy_spec.h"

#include <capnp/message.h>
#include <gtest/gtest.h>

#include <limits>

namespace dice::wire {
namespace {

RewardPolicyOptions service_policy() {
  RewardPolicyOptions p;
  p.kind = RewardPolicy::kBinary;
  return p;
}

TEST(RewardPolicySpecTest, WhatTheLearnerSetsIsWhatTheWorkerApplies) {
  capnp::MallocMessageBuilder message;
  auto task = message.initRoot<schema::Task>();
  fill_reward_policy({RewardPolicy::kSpeedupThreshold, 1.25}, task.initRewardPolicy());
  const RewardPolicyOptions read = task_reward_policy(task.asReader(), service_policy());
  EXPECT_EQ(read.kind, RewardPolicy::kSpeedupThreshold);
  EXPECT_DOUBLE_EQ(read.min_speedup, 1.25);
}

TEST(RewardPolicySpecTest, ATaskWithoutOneGetsTheServicesPolicy) {
  capnp::MallocMessageBuilder message;
  auto task = message.initRoot<schema::Task>();
  RewardPolicyOptions service{RewardPolicy::kSpeedupThreshold, 2.0};
  const RewardPolicyOptions read = task_reward_policy(task.asReader(), service);
  EXPECT_EQ(read.kind, RewardPolicy::kSpeedupThreshold);
  EXPECT_DOUBLE_EQ(read.min_speedup, 2.0);
}

TEST(RewardPolicySpecTest, AnUnusableSpecFallsBack) {
  for (double bad : {0.0, -1.0, std::numeric_limits<double>::quiet_NaN(),
                     std::numeric_limits<double>::infinity()}) {
    capnp::MallocMessageBuilder message;
    auto task = message.initRoot<schema::Task>();
    auto spec = task.initRewardPolicy();
    spec.setKind(schema::RewardPolicyKind::SPEEDUP_THRESHOLD);
    spec.setMinSpeedup(bad);
    EXPECT_EQ(task_reward_policy(task.asReader(), service_policy()).kind, RewardPolicy::kBinary)
        << "min_speedup " << bad;
  }
  // An enumerant from a newer learner.
  capnp::MallocMessageBuilder message;
  auto task = message.initRoot<schema::Task>();
  task.initRewardPolicy().setKind(static_cast<schema::RewardPolicyKind>(7));
  EXPECT_EQ(task_reward_policy(task.asReader(), service_policy()).kind, RewardPolicy::kBinary);
}

}  // namespace
}  // namespace dice::wire
