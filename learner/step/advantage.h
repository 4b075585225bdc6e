// Group-relative advantages (DICE/TraceRL): each sample's reward z-scored within its group of
// samples of one task, advantage = (r - mean) / (std + eps) with the population std. A group whose
// rewards are all equal carries no learning signal; with drop_constant it is dropped (all
// advantages 0, `dropped` set) and the policy update skips it.
#pragma once

#include <vector>

namespace dice {

// Added to the std so a near-constant group cannot blow advantages up.
inline constexpr double kAdvantageEpsilon = 1e-6;

struct GroupAdvantages {
  std::vector<double> advantages;  // one per reward, same order; all 0 when dropped
  double mean = 0.0;
  double std = 0.0;       // population standard deviation
  bool constant = false;  // every reward equal (an empty or one-sample group too)
  bool dropped = false;   // constant && drop_constant
};

GroupAdvantages group_advantages(const std::vector<double>& rewards, bool drop_constant,
                                 double epsilon = kAdvantageEpsilon);

}  // namespace dice
