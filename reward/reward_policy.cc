#include "reward/reward_policy.h"

namespace dice {

float compute_reward(const RewardPolicyOptions& policy, const VerdictOutcome& outcome) {
  if (!outcome.compiled || !outcome.correct || outcome.fatal_finding) return 0.0f;
  switch (policy.kind) {
    case RewardPolicy::kBinary:
      return 1.0f;
    case RewardPolicy::kSpeedupThreshold:
      return outcome.speedup >= policy.min_speedup ? 1.0f : 0.0f;
  }
  return 0.0f;
}

}  // namespace dice
