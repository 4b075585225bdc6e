#include "learner/run/run_loop.h"

#include <algorithm>
#include <deque>
#include <unordered_set>

#include "common/fixed_text.h"
#include "common/log.h"
#include "learner/push/weight_sync_plan.h"
#include "learner/resume/resume_plan.h"
#include "learner/resume/resume_store.h"
#include "learner/run/step_flight.h"
#include "learner/run/step_report.h"
#include "learner/step/sample_carry.h"
#include "learner/step/step_records.h"
#include "net/wire/envelope.h"
#include "net/wire/sampling_params.h"

namespace dice {
namespace {

using Clock = std::chrono::steady_clock;

// How many steps of `plan` may be in flight beyond the one the next update trains on
// (learner.async.max_ahead): only rl phases that update; an eval phase runs step by step.
int rollout_ahead(const DiceConfig& config, const PhasePlan& plan, const RunLoopOptions& options) {
  if (plan.type != PhaseType::kRl || !options.update) return 0;
  return config.learner.async.max_ahead;
}

// What StepTracker needs to know about step `global_step` of `plan`.
StepSettings step_settings(const RunLoopOptions& options, const DiceConfig& config,
                           const PhasePlan& plan, std::uint64_t global_step,
                           std::uint64_t policy_version, const std::string& weights_dir) {
  StepSettings settings;
  settings.run_id = options.run_id;
  settings.learner_id = options.learner_id;
  settings.step = global_step;
  settings.samples_per_task = static_cast<std::uint32_t>(plan.samples_per_task);
  settings.policy_version = policy_version;
  settings.weights_dir = weights_dir;
  settings.max_staleness = static_cast<std::uint64_t>(config.learner.max_staleness);
  settings.drop_constant_groups = config.learner.loss.drop_constant_groups;
  settings.internal_errors = config.learner.internal_errors;
  settings.fill_sampling = [sampling = plan.sampling](auto out) {
    wire::fill_sampling_params(sampling, out);
  };
  settings.temperature = plan.sampling.temperature;
  settings.phase_name = plan.name;
  settings.evaluation = plan.type == PhaseType::kEval;
  settings.want_timing = plan.timing;
  settings.reward_policy = plan.reward_policy;
  settings.reward_mode = options.reward_mode;
  settings.rollout_ahead = static_cast<std::uint32_t>(rollout_ahead(config, plan, options));
  return settings;
}

// New weights (an update or an sft phase that ran) become current.
void adopt(const LearnerMetrics& metrics, const PolicyUpdate& update, std::uint64_t* policy_version,
           std::string* weights_dir) {
  if (!update.ran) return;
  *policy_version = update.policy_version;
  *weights_dir = update.checkpoint_dir;
  metrics.policy_version->set(static_cast<double>(*policy_version));
}

// New weights go to the workers: only once the run's position with them is saved, so that no
// worker ever holds a version a restarted learner does not know.
Status push(const RunLoopOptions& options, transport::WorkDispatcher& dispatcher,
            const PolicyUpdate& update) {
  if (!update.ran || update.checkpoint_dir.empty()) return Status::ok_status();
  if (options.push_weights) return options.push_weights(update, dispatcher);
  WeightsPushOptions push;  // no pusher given (no policy to broadcast from): checkpoint folders
  push.abort_in_flight = options.abort_in_flight;
  push.learner_id = options.learner_id;
  push.run_id = options.run_id;
  return checkpoint_weights_pusher(push)(update, dispatcher);
}

// The policy update on the step's traces (none without an updater or traces); when it ran, the
// new version and its checkpoint folder become current (pushed later: push()).
Result<PolicyUpdate> update_policy(const RunLoopOptions& options, const LearnerMetrics& metrics,
                                   std::vector<TraceSample>& traces, std::uint64_t global_step,
                                   std::uint64_t* policy_version, std::string* weights_dir) {
  PolicyUpdate update;
  if (!options.update || traces.empty()) return update;
  DICE_ASSIGN_OR_RETURN(update, options.update(std::move(traces), global_step, *policy_version));
  traces.clear();
  adopt(metrics, update, policy_version, weights_dir);
  return update;
}

// What the phases of one run share: ids, the step counter, the weights held, the ETA's clock,
// and what a resume folder records of the phases.
struct RunState {
  std::uint64_t next_work_id = 1;
  std::uint64_t next_group_id = 1;
  std::uint64_t global_step = 0;
  std::uint64_t policy_version = 0;
  std::string weights_dir;  // checkpoint folder of policy_version; empty: the initial policy
  int total_steps = 0;      // of the rl and eval phases, for the ETA
  int steps_before = 0;     // of those, done before a restart
  double seconds_so_far = 0.0;
  std::vector<std::string> phases_done;
  int resumes = 0;
  std::vector<PhaseFingerprint> phases;  // of this run's plans
};

// Writes the run's resume folder: `phase` is the rl phase in progress (or just finished) with
// `steps_done` steps done and its `scheduler` state (empty phase: none). `next_step` is the step
// to run next.
Status save_position(const RunLoopOptions& options, const RunState& state, std::uint64_t next_step,
                     const std::string& phase, int steps_done, const TaskSchedulerState* scheduler,
                     int steps_completed) {
  if (options.resume_dir.empty()) return Status::ok_status();
  RunPosition p;
  p.run_id = options.run_id;
  p.next_step = next_step;
  p.policy_version = state.policy_version;
  p.weights_dir = state.weights_dir;
  p.next_work_id = state.next_work_id;
  p.next_group_id = state.next_group_id;
  p.steps_completed = state.steps_before + steps_completed;
  p.seconds_so_far = state.seconds_so_far;
  p.phases_done = state.phases_done;
  p.phase = phase;
  p.phase_steps_done = steps_done;
  p.has_scheduler = scheduler != nullptr;
  if (scheduler != nullptr) p.scheduler = *scheduler;
  p.seed = options.seed;
  p.resumes = state.resumes;
  p.state_interval_steps = options.state_interval_steps;
  p.phases = state.phases;
  const auto started = Clock::now();
  DICE_RETURN_IF_ERROR(
      write_resume(options.resume_dir, p, options.save_state, options.min_free_disk_bytes)
          .with_context("resume folder after step " +
                        std::to_string(next_step == 0 ? 0 : next_step - 1)));
  DICE_LOG(Debug) << "resume folder written" << kv("next_step", next_step)
                  << kv("policy_version", state.policy_version)
                  << kv("seconds",
                        fixed_text(std::chrono::duration<double>(Clock::now() - started).count(),
                                   2));
  return Status::ok_status();
}

// Takes the run back to options.resume: the curriculum compared (each change logged), the
// weights and optimizer state loaded, the log's records from the position's step on erased, the
// counters set. Work and group ids jump by 2^32, so that a result of the work the crash cut short
// can never match work issued now.
Result<ResumePlan> resume_run(const std::vector<PhasePlan>& phases, const RunLoopOptions& options,
                              rewardlog::RewardLogWriter& log, const LearnerMetrics& metrics,
                              RunState* state) {
  const ResumePoint& point = *options.resume;
  const RunPosition& p = point.position;
  ResumePlan plan = plan_resume(p, phases);
  for (const std::string& change : plan.changes) {
    DICE_LOG(Warn) << "curriculum changed since the resume point: " << change;
  }
  ResumedWeights weights{p.policy_version, p.weights_dir};
  if (options.load_state) {
    DICE_ASSIGN_OR_RETURN(
        weights, options.load_state(point.dir, p.policy_version, p.state_interval_steps > 1));
  }
  DICE_ASSIGN_OR_RETURN(std::size_t erased,
                        log.erase_run_from(options.run_id, p.next_step, {"sft/"}));
  constexpr std::uint64_t kIdJump = std::uint64_t{1} << 32;
  state->next_work_id = p.next_work_id + kIdJump;
  state->next_group_id = p.next_group_id + kIdJump;
  state->global_step = p.next_step;
  state->policy_version = weights.policy_version;
  state->weights_dir = weights.weights_dir;
  state->steps_before = p.steps_completed;
  state->seconds_so_far = p.seconds_so_far;
  state->phases_done = p.phases_done;
  state->resumes = p.resumes + 1;
  metrics.policy_version->set(static_cast<double>(state->policy_version));
  DICE_LOG(Info) << "run resumed" << kv("from", point.dir.empty() ? "the start" : point.dir)
                 << kv("next_step", p.next_step) << kv("policy_version", state->policy_version)
                 << kv("phase", p.phase.empty() ? "-" : p.phase)
                 << kv("phase_steps_done", p.phase_steps_done)
                 << kv("phases_done", p.phases_done.size()) << kv("records_erased", erased)
                 << kv("resume", state->resumes) << kv("curriculum_changes", plan.changes.size());
  return plan;
}

// An sft phase: its weights become the next version (pushed once the phase's position is saved).
Result<PolicyUpdate> run_sft_phase(const PhasePlan& plan, const RunLoopOptions& options,
                                   PhaseContext& context, RunState* state) {
  if (!options.sft) {
    DICE_LOG(Warn) << "sft phase skipped: this learner updates no policy" << kv("phase", plan.name)
                   << kv("learner.update_policy", "false");
    return PolicyUpdate{};
  }
  DICE_ASSIGN_OR_RETURN(PolicyUpdate update,
                        options.sft(plan.name, plan.sft_data, plan.epochs, state->policy_version,
                                    context.log, context.stop_requested));
  DICE_LOG(Info) << "sft phase done" << kv("phase", plan.name) << kv("trained", update.ran)
                 << kv("policy_version", update.ran ? update.policy_version : state->policy_version)
                 << kv("seconds", fixed_text(update.seconds, 1));
  adopt(context.metrics, update, &state->policy_version, &state->weights_dir);
  return update;
}

}  // namespace

namespace {

// The latest sampled evaluations of one policy version and task kind: (correct, judged) per task
// id, for the pass-rate band of an rl phase of that kind that starts from the same weights. Kept
// in memory: a run restarted between the evaluation and the rl phase starts its band without
// them, as before.
struct EvaluatedTasks {
  bool any = false;
  std::uint64_t policy_version = 0;
  TaskKind kind = TaskKind::kEndToEnd;
  std::map<std::string, std::pair<int, int>> rates;

  bool measured(std::uint64_t version, TaskKind of) const {
    return any && policy_version == version && kind == of;
  }
};

// The steps of an rl or eval phase, from step `steps_done` + 1 (a resumed phase, with its
// scheduler's `saved` state); the scheduler's state at the end goes to `*final`. Returns false
// when the run stops here (a stop request, or a step cut short). In the asynchronous mode
// (rollout_ahead() > 0) the next steps are started before the update of the one in front, so
// that rollout and reward work on them while it is judged and trained; steps never cross a
// phase's end.
Result<bool> run_step_phase(const PhasePlan& plan, const DiceConfig& config,
                            const RunLoopOptions& options, PhaseContext& context, RunState* state,
                            RunSummary* summary, int steps_done, const TaskSchedulerState* saved,
                            EvaluatedTasks* evaluated, TaskSchedulerState* final) {
  const bool eval = plan.type == PhaseType::kEval;
  const int ahead = rollout_ahead(config, plan, options);
  const AsyncOptions& async = config.learner.async;
  eval::EvalTally tally({plan.samples_per_task, {}, eval::kDefaultNoiseZ});
  context.tally = eval ? &tally : nullptr;
  TaskScheduler scheduler(&plan.tasks, plan.schedule);
  if (saved != nullptr) {
    for (const std::string& note : scheduler.restore(*saved)) {
      DICE_LOG(Warn) << "scheduler state of the resume point does not fit whole: " << note
                     << kv("phase", plan.name);
    }
  }
  context.scheduler = &scheduler;
  context.evaluated = nullptr;
  if (eval && plan.decoding == Decoding::kSample) {
    if (!evaluated->measured(state->policy_version, plan.kind)) {
      *evaluated = {true, state->policy_version, plan.kind, {}};
    }
    context.evaluated = &evaluated->rates;
  } else if (!eval && saved == nullptr && steps_done == 0 && plan.schedule.band &&
             evaluated->measured(state->policy_version, plan.kind)) {
    const int primed = scheduler.prime(evaluated->rates);
    if (primed > 0) {
      DICE_LOG(Info) << "pass-rate band primed by this policy's sampled evaluation"
                     << kv("phase", plan.name) << kv("tasks", primed) << kv("of", plan.tasks.size())
                     << kv("policy_version", state->policy_version);
    }
  }
  SampleCarry carry(static_cast<std::size_t>(config.learner.min_mixed_samples));
  Flight flight;
  const std::uint64_t first_step = state->global_step;  // of step steps_done + 1
  int next_k = steps_done + 1;                          // the next step to start
  auto start_step = [&](int k) {
    const std::uint64_t global = first_step + static_cast<std::uint64_t>(k - steps_done - 1);
    auto work = std::make_unique<StepWork>(
        step_settings(options, config, plan, global, state->policy_version, state->weights_dir),
        &state->next_work_id, &state->next_group_id);
    work->started = Clock::now();
    work->timing.started_ms = wire::unix_millis_now();
    work->refills_left = eval ? 0 : plan.refill_constant_groups;
    work->schedule_before = scheduler.state();
    work->tracker.start(
        scheduler.next(static_cast<std::size_t>(plan.tasks_per_step), work->selection),
        work->started);
    flight.push_back(std::move(work));
  };
  Clock::time_point last_end = Clock::now();  // of the step before, for its successor's wall time
  // The phase's last step: plan.steps, or fewer once its time budget is spent (max_seconds).
  int last = plan.steps;
  const Clock::time_point phase_start = Clock::now();
  for (int k = steps_done + 1; k <= last; ++k, ++state->global_step) {
    if (*context.stopping || context.stop_requested()) {
      // A stop between steps has no step to drain; said here, since drive_front says it only
      // for a stop that lands inside a step.
      if (!*context.stopping) {
        *context.stopping = true;
        DICE_LOG(Info) << "stop requested: no new steps" << kv("phase", plan.name);
      }
      summary->stopped = true;
      return false;
    }
    if (!eval && plan.max_seconds > 0 && last >= next_k &&
        std::chrono::duration<double>(Clock::now() - phase_start).count() >= plan.max_seconds) {
      // The budget is spent: the steps started finish and train, none is started.
      last = next_k - 1;
      DICE_LOG(Info) << "phase time budget spent: no new steps" << kv("phase", plan.name)
                     << kv("max_seconds", plan.max_seconds) << kv("steps", last)
                     << kv("planned", plan.steps) << kv("carried_samples_left", carry.carried());
      if (k > last) break;
    }
    while (next_k <= last && next_k <= k + ahead) start_step(next_k++);
    StepWork& work = *flight.front();
    const StepSettings& settings = work.tracker.settings();
    context.metrics.step->set(static_cast<double>(state->global_step));
    DICE_ASSIGN_OR_RETURN(bool interrupted, drive_front(flight, context));
    DICE_RETURN_IF_ERROR(context.log.flush());  // every candidate of the step is durable
    work.timing.finished_ms = wire::unix_millis_now();
    StepCounts c = work.tracker.counts();
    if (interrupted) {
      summary->interrupted = true;
      summary->stopped = true;
      DICE_LOG(Warn) << "step cut short by the stop (drain timeout, or no worker left): its "
                        "verdicts are logged, no StepRecord"
                     << kv("step", state->global_step) << kv("phase", plan.name)
                     << kv("verdicts", c.verdicts) << kv("groups_skipped", c.groups_skipped);
      return false;
    }
    // How stale the batch is, against the weights its update starts from.
    count_staleness(work.tracker.candidate_versions(), state->policy_version, &c);
    PolicyUpdate update;
    std::vector<rewardlog::LogRecord> update_records;
    if (!eval) {
      if (ahead == 0 || async.stale == StaleSamples::kDrop) {
        const std::uint32_t dropped = drop_stale_traces(
            work, state->policy_version, static_cast<std::uint64_t>(config.learner.max_staleness));
        c.stale_dropped += dropped;
        context.metrics.stale->add(dropped);
      }
      sort_traces(work);
      // learner.min_mixed_samples: too few samples with signal wait for the next step's.
      const auto carried_in = static_cast<std::int64_t>(carry.carried());
      std::vector<TraceSample> batch = carry.take(std::move(work.traces), k == last);
      work.traces.clear();
      const bool trains = !batch.empty();
      DICE_ASSIGN_OR_RETURN(update,
                            update_policy(options, context.metrics, batch, state->global_step,
                                          &state->policy_version, &state->weights_dir));
      update.carried_in = trains ? carried_in : 0;
      update.carried_out = static_cast<std::int64_t>(carry.carried());
      DICE_ASSIGN_OR_RETURN(update_records, carry_records(update, settings));
    }
    work.timing.finished_ms = wire::unix_millis_now();
    const ScheduleReport schedule = scheduler.end_step(work.selection);
    DICE_ASSIGN_OR_RETURN(std::vector<rewardlog::LogRecord> scheduled,
                          schedule_records(plan, schedule, settings));
    for (rewardlog::LogRecord& r : update_records) scheduled.push_back(std::move(r));
    DICE_RETURN_IF_ERROR(append_step_records(context.log, c, settings, plan.kind, work.timing,
                                             update, std::move(scheduled)));
    context.metrics.steps->add();
    ++summary->steps_completed;
    // A step's wall time: from its start, or from the end of the step before when it ran ahead.
    const auto now = Clock::now();
    const double seconds =
        std::chrono::duration<double>(now - std::max(work.started, last_end)).count();
    last_end = now;
    state->seconds_so_far += seconds;
    // An eval phase's table is not in a position, so a resume runs the whole phase again. With
    // steps ahead in flight, the position is the scheduler's before the next of them drew its
    // tasks: a resume draws them again rather than passing over them.
    if (!eval && k % std::max(options.state_interval_steps, 1) == 0) {
      const TaskSchedulerState now_state =
          flight.size() > 1 ? flight[1]->schedule_before : scheduler.state();
      DICE_RETURN_IF_ERROR(save_position(options, *state, state->global_step + 1, plan.name, k,
                                         &now_state, summary->steps_completed));
    }
    DICE_RETURN_IF_ERROR(push(options, context.dispatcher, update));
    const int done = state->steps_before + summary->steps_completed;
    const double eta = state->seconds_so_far / done * std::max(state->total_steps - done, 0);
    const double span = std::chrono::duration<double>(now - work.started).count();
    log_step_line(k, plan, state->global_step, c, seconds, span, eta, state->policy_version, update,
                  schedule, options.update ? "TraceRL" : kNoPolicyUpdate, options.reward_mode,
                  ahead);
    // Requests of the step's skipped groups that never left the backlog: nobody waits for them.
    context.backlog.erase(std::remove_if(context.backlog.begin(), context.backlog.end(),
                                         [&](const transport::WorkItem& item) {
                                           return work.tracker.owns(item.work_id);
                                         }),
                          context.backlog.end());
    flight.pop_front();
  }
  context.tally = nullptr;
  context.scheduler = nullptr;
  context.evaluated = nullptr;
  context.backlog.clear();  // requests of skipped groups nobody waits for
  *final = scheduler.state();
  if (eval) {
    DICE_RETURN_IF_ERROR(report_evaluation(plan, tally, state->policy_version, state->global_step,
                                           options.run_id, options.reward_mode, context.log));
  }
  return true;
}

}  // namespace

Result<RunSummary> run_phases(const std::vector<PhasePlan>& phases, const DiceConfig& config,
                              const RunLoopOptions& options, transport::WorkDispatcher& dispatcher,
                              rewardlog::RewardLogWriter& log, const LearnerMetrics& metrics,
                              const std::function<bool()>& stop_requested) {
  RunSummary summary;
  RunState state;
  LoggedOnce logged;
  bool stopping = false;
  for (const PhasePlan& plan : phases) {
    if (plan.type != PhaseType::kSft) state.total_steps += plan.steps;
    state.phases.push_back(phase_fingerprint(plan));
  }
  ResumePlan resumed;
  resumed.done.assign(phases.size(), false);
  if (options.resume) {
    DICE_ASSIGN_OR_RETURN(resumed, resume_run(phases, options, log, metrics, &state));
  }
  metrics.policy_version->set(static_cast<double>(state.policy_version));
  const char* update_mode = options.update ? "TraceRL" : kNoPolicyUpdate;
  DICE_LOG(Info) << "policy update: " << update_mode << kv("policy_version", state.policy_version)
                 << kv("phases", phases.size()) << kv("steps", state.total_steps)
                 << kv("reward_mode", options.reward_mode);

  PhaseContext context{dispatcher,
                       log,
                       metrics,
                       {options.poll_interval, options.group_timeout, options.drain_timeout},
                       static_cast<bool>(options.update),
                       stop_requested,
                       logged,
                       &stopping};
  EvaluatedTasks evaluated;
  for (std::size_t i = 0; i < phases.size(); ++i) {
    const PhasePlan& plan = phases[i];
    if (resumed.done[i]) continue;
    if (stopping || stop_requested()) {
      if (!stopping) {
        DICE_LOG(Info) << "stop requested: no new phases" << kv("next", plan.name);
      }
      summary.stopped = true;
      return summary;
    }
    PolicyUpdate sft_update;
    TaskSchedulerState final_schedule;
    if (plan.type == PhaseType::kSft) {
      DICE_ASSIGN_OR_RETURN(sft_update, run_sft_phase(plan, options, context, &state));
      if (stop_requested()) {  // SFT ended early: not done, a resume trains it again
        summary.stopped = true;
        DICE_RETURN_IF_ERROR(push(options, dispatcher, sft_update));
        return summary;
      }
    } else {
      const bool current = resumed.current == static_cast<int>(i);
      const int steps_done = current ? resumed.steps_done : 0;
      if (plan.type == PhaseType::kRl && options.start_phase) {
        DICE_RETURN_IF_ERROR(
            options.start_phase(plan.name, i > 0 ? phases[i - 1].name : "", steps_done > 0));
      }
      const TaskSchedulerState* saved = current && options.resume->position.has_scheduler
                                            ? &options.resume->position.scheduler
                                            : nullptr;
      DICE_ASSIGN_OR_RETURN(
          bool go_on, run_step_phase(plan, config, options, context, &state, &summary, steps_done,
                                     saved, &evaluated, &final_schedule));
      if (!go_on) return summary;
    }
    if (options.finish_phase) {
      DICE_ASSIGN_OR_RETURN(std::string dir, options.finish_phase(plan.name, state.policy_version,
                                                                  state.weights_dir));
      DICE_LOG(Info) << "phase checkpoint written" << kv("phase", plan.name) << kv("dir", dir)
                     << kv("policy_version", state.policy_version);
    }
    state.phases_done.push_back(plan.name);
    // An rl phase stays named with its scheduler, so that it can go on if the curriculum grows it.
    const bool rl = plan.type == PhaseType::kRl;
    DICE_RETURN_IF_ERROR(save_position(options, state, state.global_step, rl ? plan.name : "",
                                       rl ? plan.steps : 0, rl ? &final_schedule : nullptr,
                                       summary.steps_completed));
    DICE_RETURN_IF_ERROR(push(options, dispatcher, sft_update));
  }
  return summary;
}

}  // namespace dice
