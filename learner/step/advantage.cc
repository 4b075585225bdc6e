#include "learner/step/advantage.h"

#include <algorithm>
#include <cmath>

namespace dice {

GroupAdvantages group_advantages(const std::vector<double>& rewards, bool drop_constant,
                                 double epsilon) {
  GroupAdvantages out;
  out.advantages.assign(rewards.size(), 0.0);
  out.constant = rewards.empty() || std::all_of(rewards.begin(), rewards.end(),
                                                [&](double r) { return r == rewards.front(); });
  if (rewards.empty()) {
    out.dropped = drop_constant;
    return out;
  }
  double sum = 0.0;
  for (double r : rewards) sum += r;
  out.mean = sum / static_cast<double>(rewards.size());
  double squares = 0.0;
  for (double r : rewards) squares += (r - out.mean) * (r - out.mean);
  out.std = std::sqrt(squares / static_cast<double>(rewards.size()));
  if (out.constant) {
    // z-scores of a constant group are 0 whether or not it is dropped.
    out.dropped = drop_constant;
    return out;
  }
  for (std::size_t i = 0; i < rewards.size(); ++i) {
    out.advantages[i] = (rewards[i] - out.mean) / (out.std + epsilon);
  }
  return out;
}

}  // namespace dice
