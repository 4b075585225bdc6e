#include "net/wire/reward_policy_spec.h"

#include <cmath>

namespace dice::wire {

void fill_reward_policy(const RewardPolicyOptions& policy, schema::RewardPolicySpec::Builder out) {
  out.setKind(policy.kind == RewardPolicy::kSpeedupThreshold
                  ? schema::RewardPolicyKind::SPEEDUP_THRESHOLD
                  : schema::RewardPolicyKind::BINARY);
  out.setMinSpeedup(policy.min_speedup);
}

RewardPolicyOptions task_reward_policy(schema::Task::Reader task,
                                       const RewardPolicyOptions& fallback) {
  if (!task.hasRewardPolicy()) return fallback;
  const schema::RewardPolicySpec::Reader spec = task.getRewardPolicy();
  RewardPolicyOptions policy;
  switch (spec.getKind()) {
    case schema::RewardPolicyKind::BINARY:
      policy.kind = RewardPolicy::kBinary;
      break;
    case schema::RewardPolicyKind::SPEEDUP_THRESHOLD:
      policy.kind = RewardPolicy::kSpeedupThreshold;
      break;
    default:  // an enumerant this build does not know
      return fallback;
  }
  policy.min_speedup = spec.getMinSpeedup();
  if (!std::isfinite(policy.min_speedup) || policy.min_speedup <= 0) return fallback;
  return policy;
}

}  // namespace dice::wire
