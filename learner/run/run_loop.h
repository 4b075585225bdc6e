// The learner's run loop: for each selected curriculum phase (options/curriculum_options.h), by
// its type:
//   rl    for each of its steps, a StepTracker fed by the WorkDispatcher (rollout requests out,
//         candidates in, evaluation requests out, verdicts in), its records written to the reward
//         log, one progress line per step, and the policy update;
//   eval  the same steps without an update, decoded as the phase says (greedy by default), and
//         at the end the field's table (tasks/eval_table.h) in the log and as eval/ metrics;
//   sft   the SftStage on the phase's data; its weights become the next version, pushed to the
//         workers like an update's;
// and after every phase its checkpoint (RunLoopOptions::finish_phase).
//
//   phase -> step -> [StepTracker] -> backlog -> dispatcher.submit()
//                          ^                          |
//                          +---- next_result() <------+
//
// Requests go into a local backlog first and are submitted without waiting, so the loop never
// blocks on a full dispatcher queue while results pile up behind it.
//
// After each finished step the samples of its used groups (complete, not constant) go to the
// policy updater (policy_updater.h: TraceRL step, checkpoint), or wait for the next step's while
// fewer than learner.min_mixed_samples are gathered (learner/step/sample_carry.h); new weights are
// announced to every worker with a WeightsUpdate naming the checkpoint folder (or broadcast by
// NCCL, with that folder as the fallback: RunLoopOptions::push_weights), and the next step asks for
// them (RolloutRequest.minPolicyVersion). Without an updater (learner.update_policy false) the run
// evaluates only: weights stay at policy version 0, and the loop says so.
//
// The asynchronous mode (learner.async.max_ahead = k > 0, docs/ASYNC.md): an rl phase keeps up
// to k more steps in flight beyond the one the next update trains on, each with its own
// StepTracker; results go to the step that asked, updates stay in step order, and each step
// says how stale its candidates were (StepCounts::staleness_*). Stale samples are dropped past
// learner.max_staleness (stale: drop) or importance-weighted in the update (stale: importance).
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "learner/curriculum/phase_plan.h"
#include "learner/curriculum/task_loader.h"
#include "learner/curriculum/task_scheduler.h"
#include "learner/resume/resume_store.h"
#include "learner/run/learner_metrics.h"
#include "learner/step/policy_update.h"
#include "net/transport/work_dispatcher.h"
#include "options/dice_config.h"
#include "rewardlog/writer.h"

namespace dice {

struct RunLoopOptions {
  std::string run_id = "-";
  std::string learner_id = "learner";
  // A group not finished this long after its rollout request is skipped. Default: 3600 s
  std::chrono::milliseconds group_timeout{3600 * 1000};
  // After a stop request, the longest wait for the step's work in flight. Default: 600 s
  std::chrono::milliseconds drain_timeout{600 * 1000};
  // Longest wait for one result before the loop checks timeouts and the stop flag. Default: 100
  std::chrono::milliseconds poll_interval{100};
  // The policy update; empty: evaluation only (weights stay at version 0). Default: empty
  PolicyUpdater update;
  // WeightsUpdate.abortInFlight of the pushes. Default: false
  bool abort_in_flight = false;
  // Pushes each new version to the workers (make_weights_pusher, learner/push/nccl_weight_pusher.h:
  // NCCL broadcast with the checkpoint folder as fallback, or the folder alone); an error ends the
  // run. Empty: checkpoint_weights_pusher (learner/push/weight_sync_plan.h). Default: empty
  WeightsPusher push_weights;
  // Runs an sft phase; empty (no policy update): sft phases are skipped, saying so. Default:
  // empty
  SftStage sft;
  // Writes each phase's closing checkpoint; empty: none is written. Default: empty
  PhaseCheckpointer finish_phase;
  // Called as each rl phase's steps begin (the KL reference of loss.kl_reference phase_start);
  // empty: nothing is. Default: empty
  PhaseStarter start_phase;
  // Named in every step line and the evaluation table: how verdicts are reached
  // (reward.mode: full, compile_only, extraction_only). Default: "full"
  std::string reward_mode = "full";

  // Resume (docs/RESUME.md). Where the run's resume folder is kept (learner/resume/resume_store.h:
  // <checkpoint.dir>/<run id>); empty: none is written. Default: empty
  std::string resume_dir;
  // A resume folder after every this many steps of an rl phase, and after every phase. Default: 1
  int state_interval_steps = 1;
  // What goes into a resume folder besides the position, and takes it back (the policy stages'
  // save_state / load_state); empty: the position only (a learner that updates no policy).
  // Default: empty
  StateSaver save_state;
  StateLoader load_state;
  // run.min_free_disk_mb in bytes: what a resume folder must leave free on its disk besides its
  // own size, or it is refused (learner/resume/resume_store.h). Default: 0
  std::uint64_t min_free_disk_bytes = 0;
  // learner.seed as the run uses it, kept in the position. Default: 0
  std::uint64_t seed = 0;
  // Continue a run from here (read_resume(); a default RunPosition with an empty dir: the run
  // starts over): its records from position.next_step on are erased from the log first, the
  // weights and optimizer state come back through load_state. Default: none (a new run)
  std::optional<ResumePoint> resume;
};

struct RunSummary {
  int steps_completed = 0;
  bool stopped = false;      // a stop request ended the run before its last step
  bool interrupted = false;  // the drain timed out: the last step was cut short (no StepRecord)
};

// Runs `phases` to the end or until `stop_requested()` returns true (then the step in progress is
// drained for up to drain_timeout and the loop returns). Errors: the reward log failing, or the
// dispatcher closing under the loop.
Result<RunSummary> run_phases(const std::vector<PhasePlan>& phases, const DiceConfig& config,
                              const RunLoopOptions& options, transport::WorkDispatcher& dispatcher,
                              rewardlog::RewardLogWriter& log, const LearnerMetrics& metrics,
                              const std::function<bool()>& stop_requested);

// What the learner logs (and writes in the RunRecord) when learner.update_policy is false.
inline constexpr const char kNoPolicyUpdate[] =
    "off (learner.update_policy false): evaluation only, weights unchanged";

}  // namespace dice
