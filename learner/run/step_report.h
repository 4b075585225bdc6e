// What the run loop (run_loop.h) writes about the steps it finishes: one append of a step's
// reward-log records (its StepRecord, its metrics, the schedule's and the update's series), the
// step's progress line, and an eval phase's table as a log line and eval/ metrics.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"
#include "learner/curriculum/phase_plan.h"
#include "learner/curriculum/task_scheduler.h"
#include "learner/step/policy_update.h"
#include "learner/step/step_records.h"
#include "learner/step/step_tracker.h"
#include "rewardlog/writer.h"
#include "tasks/eval_table.h"

namespace dice {

// The StepRecord, the step's metric records and `more` (the schedule's), in one append.
Status append_step_records(rewardlog::RewardLogWriter& log, const StepCounts& c,
                           const StepSettings& settings, TaskKind kind, const StepTiming& timing,
                           const PolicyUpdate& update, std::vector<rewardlog::LogRecord> more);

// The schedule after a step, as metric records dashboards read (schedule/<phase>/...): open
// levels, tasks the pass-rate band passed over and took anyway, each level's rolling correct
// rate; and a log line for each level a mixed phase opened.
Result<std::vector<rewardlog::LogRecord>> schedule_records(const PhasePlan& plan,
                                                           const ScheduleReport& report,
                                                           const StepSettings& settings);

// What an rl step's update adds to the dashboards' series: the samples it carries to a later
// update (learner.min_mixed_samples), and the lr of its last optimizer step when it ran.
Result<std::vector<rewardlog::LogRecord>> carry_records(const PolicyUpdate& update,
                                                        const StepSettings& settings);

// The progress line of step `k` of `plan`, which took `seconds` of the run's wall time (from the
// end of the step before, or its own start when later) and `span_seconds` from its own start
// (longer when it ran ahead: its candidates came in over that span); a warning after it when the
// reward service could not reach too many of the step's verdicts. `policy_update` is what the
// run's updates are ("TraceRL", or kNoPolicyUpdate: run_loop.h), shown for an rl phase's steps.
void log_step_line(int k, const PhasePlan& plan, std::uint64_t global_step, const StepCounts& c,
                   double seconds, double span_seconds, double eta, std::uint64_t policy_version,
                   const PolicyUpdate& update, const ScheduleReport& schedule,
                   const char* policy_update, const std::string& reward_mode, int ahead);

// The evaluation table of an eval phase: one line in the log, and eval/<phase>/... metrics
// (exec, fast_1, fast_2, tasks, geo_mean_speedup, per level and for all tasks) at the phase's last
// step (`global_step` - 1: the step counter is past it).
Status report_evaluation(const PhasePlan& plan, const eval::EvalTally& tally,
                         std::uint64_t policy_version, std::uint64_t global_step,
                         const std::string& run_id, const std::string& reward_mode,
                         rewardlog::RewardLogWriter& log);

}  // namespace dice
