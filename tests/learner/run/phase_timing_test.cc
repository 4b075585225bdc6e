// Which phases' verdicts are timed (run_loop.h: phase_timing): timing takes the GPU to itself, so
// an rl phase asks for it only when its reward reads a speedup.
#include <gtest/gtest.h>

#include "learner/run/run_loop.h"

namespace dice {
namespace {

CurriculumPhase phase(PhaseType type, std::optional<bool> timing = std::nullopt) {
  CurriculumPhase p;
  p.name = "p";
  p.type = type;
  p.timing = timing;
  return p;
}

TEST(PhaseTimingTest, EvalPhasesAreTimedAndRlPhasesOnlyForASpeedupReward) {
  RewardOptions binary;
  binary.policy.kind = RewardPolicy::kBinary;
  RewardOptions speedup;
  speedup.policy.kind = RewardPolicy::kSpeedupThreshold;
  EXPECT_EQ(phase_timing(phase(PhaseType::kEval), binary).value(), true);
  EXPECT_EQ(phase_timing(phase(PhaseType::kRl), binary).value(), false);
  EXPECT_EQ(phase_timing(phase(PhaseType::kRl), speedup).value(), true);
  // Asked for: as asked.
  EXPECT_EQ(phase_timing(phase(PhaseType::kRl, true), binary).value(), true);
  EXPECT_EQ(phase_timing(phase(PhaseType::kEval, false), binary).value(), false);
}

TEST(PhaseTimingTest, AnUntimedRlPhaseUnderASpeedupRewardIsBadInput) {
  RewardOptions speedup;
  speedup.policy.kind = RewardPolicy::kSpeedupThreshold;
  auto r = phase_timing(phase(PhaseType::kRl, false), speedup);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("phase p"), std::string::npos) << r.status().message();
  EXPECT_NE(r.status().message().find("speedup_threshold"), std::string::npos);
}

TEST(PhaseTimingTest, APhasesOwnRewardPolicyDecides) {
  RewardOptions binary;
  binary.policy.kind = RewardPolicy::kBinary;
  binary.timing.enabled = true;
  CurriculumPhase p = phase(PhaseType::kRl);
  p.reward_policy = RewardPolicyOptions{RewardPolicy::kSpeedupThreshold, 1.5};
  EXPECT_EQ(phase_timing(p, binary).value(), true);  // the phase's policy reads a speedup
  p.timing = false;
  auto untimed = phase_timing(p, binary);
  ASSERT_FALSE(untimed.ok());
  EXPECT_NE(untimed.status().message().find("its reward_policy"), std::string::npos)
      << untimed.status().message();
  // The reward service times nothing: a speedup reward could never be earned.
  p.timing = std::nullopt;
  binary.timing.enabled = false;
  auto off = phase_timing(p, binary);
  ASSERT_FALSE(off.ok());
  EXPECT_NE(off.status().message().find("reward.timing.enabled"), std::string::npos)
      << off.status().message();
  // And a binary phase under a speedup reward.policy is not timed.
  RewardOptions speedup;
  speedup.policy.kind = RewardPolicy::kSpeedupThreshold;
  CurriculumPhase q = phase(PhaseType::kRl);
  q.reward_policy = RewardPolicyOptions{RewardPolicy::kBinary, 1.0};
  EXPECT_EQ(phase_timing(q, speedup).value(), false);
}

}  // namespace
}  // namespace dice
