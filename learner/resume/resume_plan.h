// What a resumed run does with the curriculum it is given now, against the one it ran
// (RunPosition::phases): a phase that is done (by name) does not run again, unless it is the last
// one that ran and now has more steps; the phase in progress goes on after its done steps; every
// other phase runs in the new order. Each difference is one
// line of `changes`, for the log and the run's note:
//
//   phase "p1" is done and no longer in the curriculum
//   phase "p9" is new
//   phase "e2e": steps 40 -> 60
//   phase "e2e": its tasks changed (128 -> 140 tasks); the scheduler keeps what still fits
//   phase "e2e": 30 steps done, it now has 20: it is complete
//   phase "e2e" had finished after 40 steps; it goes on to 60   (the last phase run, grown)
#pragma once

#include <string>
#include <vector>

#include "learner/curriculum/phase_plan.h"
#include "learner/resume/run_position.h"

namespace dice {

// What `plan` is, for comparing curricula.
PhaseFingerprint phase_fingerprint(const PhasePlan& plan);

struct ResumePlan {
  std::vector<bool> done;  // per phase of the new plans: finished before the restart
  int current = -1;        // the phase in progress (index into the plans); -1: none
  int steps_done = 0;      // its steps done
  std::vector<std::string> changes;
};

ResumePlan plan_resume(const RunPosition& position, const std::vector<PhasePlan>& plans);

}  // namespace dice
