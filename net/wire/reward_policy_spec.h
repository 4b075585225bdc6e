// The one conversion between a reward policy as the YAML describes it (RewardPolicyOptions,
// options/reward_options.h: `reward.policy`, or a curriculum phase's `reward_policy`) and as a
// Task carries it (schema::RewardPolicySpec): the learner sets a phase's policy on each task it
// sends for judging, the reward worker rewards the verdict by it.
#pragma once

#include "options/reward_options.h"
#include "schemas/task.capnp.h"

namespace dice::wire {

void fill_reward_policy(const RewardPolicyOptions& policy, schema::RewardPolicySpec::Builder out);

// The task's policy, or `fallback` (the reward service's own) when the task carries none, or one
// this build cannot apply (an unknown kind, a min_speedup that is not a positive finite number).
RewardPolicyOptions task_reward_policy(schema::Task::Reader task,
                                       const RewardPolicyOptions& fallback);

}  // namespace dice::wire
