// The steps in flight of an rl or eval phase (learner/run/run_loop.h): one at a time in DICE's
// synchronous loop, up to 1 + learner.async.max_ahead in the asynchronous mode (docs/ASYNC.md).
// Each has its own StepTracker and scheduler selection; results go to the step that asked.
// Used by run_loop.cc only; apart so that the loop over phases and steps reads on its own.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "common/status.h"
#include "learner/curriculum/task_scheduler.h"
#include "learner/run/learner_metrics.h"
#include "learner/step/step_records.h"
#include "learner/step/step_tracker.h"
#include "net/transport/work_dispatcher.h"
#include "rewardlog/writer.h"
#include "tasks/eval_table.h"

namespace dice {

// How long the steps in flight wait (RunLoopOptions' fields of the same names).
struct FlightTimeouts {
  std::chrono::milliseconds poll_interval;  // for one result, before timeouts and stops are seen
  std::chrono::milliseconds group_timeout;  // a group not finished by then is skipped
  std::chrono::milliseconds drain_timeout;  // after a stop request, for the work in flight
};

// A phase's context: what the phase in hand and its steps share. The run makes one and hands it
// from phase to phase; an rl or eval phase sets its own table and scheduler while it runs.
struct PhaseContext {
  transport::WorkDispatcher& dispatcher;
  rewardlog::RewardLogWriter& log;
  const LearnerMetrics& metrics;
  FlightTimeouts timeouts;
  bool updates_policy;  // a policy update follows each step: used groups' samples are kept for it
  const std::function<bool()>& stop_requested;
  LoggedOnce& logged;
  bool* stopping;                    // set once a stop was requested (shared across steps)
  eval::EvalTally* tally = nullptr;  // an eval phase's table, fed every finished group
  // The phase's task scheduler (fed every finished group, and asked for refills).
  TaskScheduler* scheduler = nullptr;
  // A sampled evaluation's (correct, judged) per task id, summed over its groups, for the pass-rate
  // band of an rl phase that follows with the same policy (TaskScheduler::prime); null: none kept.
  std::map<std::string, std::pair<int, int>>* evaluated = nullptr;
  // Requests not yet taken by the dispatcher (its queue was full), of every step in flight.
  std::deque<transport::WorkItem> backlog = {};
};

// One step in flight (one at a time in the synchronous loop; up to 1 + learner.async.max_ahead
// in the asynchronous mode): its tracker and what it gathers for its update.
struct StepWork {
  StepWork(StepSettings settings, std::uint64_t* next_work_id, std::uint64_t* next_group_id)
      : tracker(std::move(settings), next_work_id, next_group_id) {}
  StepTracker tracker;
  std::chrono::steady_clock::time_point started;
  StepTiming timing;
  std::vector<TraceSample> traces;  // the step's samples of used groups, for the update
  // (task id, sample index) of each of `traces`: the update takes them in this order, not in the
  // order groups happened to finish, so that a step run again trains exactly the same.
  std::vector<std::pair<std::string, std::uint32_t>> trace_keys;
  // For dynamic sampling (CurriculumPhase::refill_constant_groups): how many more tasks the step
  // may start for groups that came out constant.
  int refills_left = 0;
  StepCounts seen{};  // counts already added to the metrics
  // The scheduler before this step drew its tasks: what a resume point just before this step
  // holds, when the step was drawn ahead of the update before it.
  TaskSchedulerState schedule_before;
  StepSelection selection;  // the tasks it took from the scheduler
};

using Flight = std::deque<std::unique_ptr<StepWork>>;

// The step's traces in (task id, sample index) order.
void sort_traces(StepWork& work);

// Drops the traces sampled more than `max_staleness` versions before `trained_version` (the
// asynchronous mode's stale: drop); returns how many.
std::uint32_t drop_stale_traces(StepWork& work, std::uint64_t trained_version,
                                std::uint64_t max_staleness);

// Drives the steps in flight until the first of them (the one the next update trains on) has
// ended; the others go on meanwhile: their requests are submitted, their results handled by the
// step that asked, their finished groups written (records queued in the log, samples of used
// groups kept for the update, the scheduler fed, constant groups refilled). Returns whether the
// first was cut short by the drain timeout (a stop request with no time or worker left); on a
// stop request the steps ahead are abandoned.
Result<bool> drive_front(Flight& flight, PhaseContext& context);

}  // namespace dice
