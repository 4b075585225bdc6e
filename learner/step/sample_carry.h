// SampleCarry: the samples an RL update trains on, gathered over steps until there are enough
// (learner.min_mixed_samples). A step's samples are those of its groups with mixed rewards (a
// constant group's advantages are all zero: no gradient); with few such groups an update is
// mostly noise, so a step that gathers fewer than the minimum runs no update and hands its
// samples to the next step's.
//
// Why this stays on-policy: a step's samples carry the log-probs of the weights that sampled
// them, and those weights stay current while no update runs; the carry only holds samples while
// no update has run since they were drawn.
#pragma once

#include <cstddef>
#include <vector>

#include "learner/step/trace_layout.h"

namespace dice {

class SampleCarry {
 public:
  // 0: every step trains on its own samples (no carry).
  explicit SampleCarry(std::size_t min_samples) : min_samples_(min_samples) {}

  // The samples to train on now: those carried (oldest first) and then `step_samples`, when
  // together they are at least the minimum, or when `last` (the phase's last step: nothing is
  // left waiting across a phase's end); otherwise none, and all of them wait for the next step.
  std::vector<TraceSample> take(std::vector<TraceSample> step_samples, bool last);

  // Samples waiting for a later update.
  std::size_t carried() const { return carried_.size(); }

 private:
  std::size_t min_samples_;
  std::vector<TraceSample> carried_;
};

}  // namespace dice
