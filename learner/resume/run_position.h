// RunPosition: where a run stands between two steps, everything the run loop needs besides the
// weights and the optimizer to go on from there after a crash (docs/RESUME.md):
//
//   the next global step, the policy version and its checkpoint folder, the next work and group
//   ids, the phases done and the steps done in the current one, the run's seed, the current phase's
//   scheduler state (learner/curriculum/task_scheduler.h), and what each phase was (its type, steps
//   and task ids) so that a resume over an edited curriculum can say what changed.
//
// Stored as position.json in a resume folder (resume_store.h). The reward log position is
// next_step: on resume every record of the run at or after it is erased (RewardLogWriter::
// erase_run_from), because the steps from there on run again.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"
#include "learner/curriculum/task_scheduler.h"

namespace dice {

// What a phase was when it ran: enough to notice an edit of the curriculum.
struct PhaseFingerprint {
  std::string name;
  std::string type;  // rl, eval, sft
  int steps = 0;
  std::uint64_t tasks_digest = 0;  // of its task ids in order (task_ids_digest)
  int tasks = 0;
};

struct RunPosition {
  std::string run_id;
  std::uint64_t next_step = 0;       // the global step to run next
  std::uint64_t policy_version = 0;  // the weights held (and saved with this position)
  std::string weights_dir;           // checkpoint folder of policy_version; "": initial policy
  std::uint64_t next_work_id = 1;
  std::uint64_t next_group_id = 1;
  int steps_completed = 0;               // rl and eval steps with a StepRecord, for the ETA
  double seconds_so_far = 0.0;           // their wall time
  std::vector<std::string> phases_done;  // names of the phases finished, in the order they ran
  // The rl phase in progress, or the last phase finished when that was an rl phase (then also
  // the last of phases_done); "": neither.
  std::string phase;
  int phase_steps_done = 0;    // its steps done
  bool has_scheduler = false;  // whether `scheduler` is that phase's state
  TaskSchedulerState scheduler;
  std::uint64_t seed = 0;  // learner.seed as the run drew it (sft noise, shuffles)
  int resumes = 0;         // how many times the run was resumed before
  // learner.checkpoint.state_interval_steps when this was written: above 1, weights of steps
  // after it may have reached the workers
  int state_interval_steps = 1;
  std::vector<PhaseFingerprint> phases;  // the run's phases as they ran, in order
};

// FNV-1a over the ids, each ended by a 0x00 byte.
std::uint64_t task_ids_digest(const std::vector<std::string>& ids);

std::string run_position_to_json(const RunPosition& position);
// InvalidArgument naming `where` (the file) and the field for anything missing or mistyped.
Result<RunPosition> run_position_from_json(const std::string& text, const std::string& where);

}  // namespace dice
