// What dice-dash derives from a step's candidates (the step record itself has only counts): the
// failure classes, the anti-cheat findings, the speedups of correct kernels, the reward service's
// seconds, the policy staleness, and reward and correctness per curriculum level (the level comes
// from the run's TaskRecords). A finished step's candidates never change, so each step is
// read once and kept (StepAggregateCache); only steps not seen before cost a scan.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "rewardlog/reader.h"

namespace dice::dash {

// Candidates of one level in one step.
struct LevelTally {
  uint32_t candidates = 0;
  uint32_t correct = 0;
  double reward_sum = 0;
};

struct StepAggregate {
  uint64_t step = 0;
  uint32_t candidates = 0;                   // candidate records read for the step
  std::map<std::string, uint32_t> failures;  // failure class name -> candidates
  std::map<std::string, uint32_t> findings;  // finding check -> candidates with that finding
  std::vector<float> speedups;  // of candidates judged correct with a timed speedup (> 0)
  double reward_seconds = 0;    // sum of compile + eval seconds of the step's verdicts
  uint64_t max_staleness = 0;   // step's policy version - a candidate's sampling version, max
  double mean_staleness = 0;
  // level ("0".."3"; "none" for a task file without levels) -> its candidates; candidates whose
  // task has no TaskRecord (a log from before TaskRecords) are left out
  std::map<std::string, LevelTally> levels;
  std::string error;  // non-empty: the scan stopped at a damaged record (the message names it)
};

// task id -> level of a run's TaskRecords (see StepAggregate::levels for "none").
using TaskLevels = std::map<std::string, std::string>;
Result<TaskLevels> task_levels(rewardlog::RewardLogReader& reader, const std::string& run_id);

// Reads step `step` of `run_id` (its policy version `policy_version`). A damaged record ends the
// scan: what was read before it is kept and `error` says which record.
StepAggregate aggregate_step(rewardlog::RewardLogReader& reader, const std::string& run_id,
                             uint64_t step, uint64_t policy_version, const TaskLevels& levels);

// Aggregates of finished steps (steps that have a StepRecord), per log and run.
class StepAggregateCache {
 public:
  // The aggregate of a finished step: from the cache, or read and kept. A step whose scan found
  // damage is not kept, so a log repaired in place is read again.
  // The learner writes a task's record in the same batch as its first candidates, so `levels`
  // read after the step record already covers the step.
  const StepAggregate& get(size_t log_index, rewardlog::RewardLogReader& reader,
                           const std::string& run_id, uint64_t step, uint64_t policy_version,
                           const TaskLevels& levels);

 private:
  std::map<std::string, std::map<uint64_t, StepAggregate>> runs_;  // "<log>/<run>" -> steps
  StepAggregate uncached_;
};

}  // namespace dice::dash
