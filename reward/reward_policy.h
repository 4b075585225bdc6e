// How a verdict becomes a scalar reward. DICE's released RL reward is binary: 1 when the
// candidate compiles and is correct, else 0, with no speed term. speedup_threshold also asks for
// speedup >= min_speedup (which needs timing enabled; RewardOptions::validate checks that).
#pragma once

#include "options/reward_options.h"

namespace dice {

struct VerdictOutcome {
  bool compiled = false;
  bool correct = false;
  double speedup = 0;          // eager / kernel time; 0 when not timed
  bool fatal_finding = false;  // a static or dynamic anti-cheat check zeroed the candidate
};

float compute_reward(const RewardPolicyOptions& policy, const VerdictOutcome& outcome);

}  // namespace dice
