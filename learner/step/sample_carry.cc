#include "learner/step/sample_carry.h"

#include <iterator>
#include <utility>

namespace dice {

std::vector<TraceSample> SampleCarry::take(std::vector<TraceSample> step_samples, bool last) {
  carried_.insert(carried_.end(), std::make_move_iterator(step_samples.begin()),
                  std::make_move_iterator(step_samples.end()));
  if (carried_.size() < min_samples_ && !last) return {};
  return std::exchange(carried_, {});
}

}  // namespace dice
