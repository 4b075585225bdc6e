#include "learner/run_loop.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <iomanip>
#include <sstream>
#include <unordered_set>

#include "common/log.h"
#include "common/wire/envelope.h"
#include "learner/step_records.h"

namespace dice {
namespace {

using Clock = std::chrono::steady_clock;

schema::Remasking to_schema(Remasking remasking) {
  switch (remasking) {
    case Remasking::kLowConfidenceStatic:
      return schema::Remasking::LOW_CONFIDENCE_STATIC;
    case Remasking::kSequential:
      return schema::Remasking::SEQUENTIAL;
    case Remasking::kEntropyBounded:
      return schema::Remasking::ENTROPY_BOUNDED;
    case Remasking::kLowConfidenceDynamic:
      break;
  }
  return schema::Remasking::LOW_CONFIDENCE_DYNAMIC;
}

std::function<void(schema::SamplingParams::Builder)> sampling_filler(const SamplingOptions& s) {
  return [s](schema::SamplingParams::Builder out) {
    out.setTemperature(static_cast<float>(s.temperature));
    out.setTopP(static_cast<float>(s.top_p));
    out.setTopK(static_cast<std::uint32_t>(s.top_k));
    out.setMaxNewTokens(static_cast<std::uint32_t>(s.max_new_tokens));
    out.setBlockSize(static_cast<std::uint32_t>(s.block_size));
    out.setDenoisingSteps(static_cast<std::uint32_t>(s.denoising_steps));
    out.setRemasking(to_schema(s.remasking));
    out.setThreshold(static_cast<float>(s.threshold));
    auto stops = out.initStopTokenIds(static_cast<unsigned>(s.stop_token_ids.size()));
    for (unsigned i = 0; i < stops.size(); ++i) stops.set(i, s.stop_token_ids[i]);
  };
}

std::string fixed(double value, int digits) {
  std::ostringstream out;
  out << std::fixed << std::setprecision(digits) << value;
  return out.str();
}

// Everything one step needs besides the tracker.
struct StepRun {
  transport::WorkDispatcher& dispatcher;
  rewardlog::RewardLogWriter& log;
  const LearnerMetrics& metrics;
  const RunLoopOptions& options;
  const std::function<bool()>& stop_requested;
  std::unordered_set<std::string>& seen_hashes;
  bool* stopping;                    // set once a stop was requested (shared across steps)
  std::vector<TraceSample>* traces;  // the step's samples of used groups, for the update
};

// Writes the finished groups' records (queued; flushed at the end of the step).
Status write_groups(StepTracker& tracker, StepRun& run) {
  for (const FinishedGroup& group : tracker.take_finished()) {
    if (group.complete) {
      (group.dropped ? run.metrics.groups_dropped : run.metrics.groups_used)->add();
    } else {
      run.metrics.groups_skipped->add();
    }
    DICE_ASSIGN_OR_RETURN(auto records, group_records(group, tracker.settings(), &run.seen_hashes,
                                                      wire::unix_millis_now()));
    if (!records.empty()) DICE_RETURN_IF_ERROR(run.log.enqueue(std::move(records)));
    if (group.complete && !group.dropped && run.options.update) {
      for (const FinishedSample& sample : group.samples) run.traces->push_back(sample.trace);
    }
  }
  return Status::ok_status();
}

// Drives one step to its end. Returns whether it was cut short by the drain timeout.
Result<bool> drive_step(StepTracker& tracker, StepRun& run) {
  std::deque<transport::WorkItem> backlog;
  Clock::time_point drain_deadline{};
  bool interrupted = false;
  StepCounts seen{};  // counts already added to the metrics
  while (true) {
    for (auto& item : tracker.take_outbox()) backlog.push_back(std::move(item));
    while (!backlog.empty()) {
      Status submitted = run.dispatcher.submit(backlog.front(), std::chrono::milliseconds(0));
      if (submitted.code() == StatusCode::kUnavailable) break;  // queue full: retry next round
      if (!submitted.ok()) return submitted;
      backlog.pop_front();
    }
    run.metrics.backlog->set(static_cast<double>(backlog.size()));
    run.metrics.open_groups->set(static_cast<double>(tracker.open_groups()));
    DICE_RETURN_IF_ERROR(write_groups(tracker, run));
    if (tracker.done()) break;

    auto result = run.dispatcher.next_result(run.options.poll_interval);
    if (result.ok()) {
      tracker.handle(std::move(result).value());
    } else if (result.status().code() != StatusCode::kTimeout) {
      return result.status();
    }
    const auto now = Clock::now();
    tracker.expire(now, run.options.group_timeout);
    if (!*run.stopping && run.stop_requested()) {
      *run.stopping = true;
      drain_deadline = now + run.options.drain_timeout;
      DICE_LOG(Info) << "stop requested: no new steps; draining the step in flight"
                     << kv("open_groups", tracker.open_groups())
                     << kv("drain_timeout_s", run.options.drain_timeout.count() / 1000.0);
    }
    if (*run.stopping && !tracker.done()) {
      // Nothing can finish without a worker, so waiting out the timeout would only delay exit.
      const bool no_workers = run.dispatcher.stats().workers == 0;
      if (now >= drain_deadline || no_workers) {
        tracker.abandon_all(no_workers ? "stopped with no worker connected" : "drain timeout");
        interrupted = true;
      }
    }
    // Metrics move as results arrive, not only at the end of the step.
    const StepCounts& c = tracker.counts();
    run.metrics.candidates->add(c.candidates - seen.candidates);
    run.metrics.verdicts->add(c.verdicts - seen.verdicts);
    run.metrics.correct->add(c.correct - seen.correct);
    run.metrics.stale->add(c.stale_dropped - seen.stale_dropped);
    run.metrics.rollout_errors->add(c.rollout_errors - seen.rollout_errors);
    run.metrics.reward_errors->add(c.eval_errors - seen.eval_errors);
    seen = c;
  }
  return interrupted;
}

}  // namespace

Status push_checkpoint_weights(transport::WorkDispatcher& dispatcher, const std::string& learner_id,
                               const std::string& run_id, const PolicyUpdate& update,
                               bool abort_in_flight) {
  capnp::MallocMessageBuilder message;
  auto weights = wire::init_envelope(message, learner_id, run_id).getBody().initWeightsUpdate();
  weights.setPolicyVersion(update.policy_version);
  weights.setCheckpointDir(update.checkpoint_dir);
  weights.setAbortInFlight(abort_in_flight);
  DICE_RETURN_IF_ERROR(dispatcher.broadcast(wire::encode(message)));
  DICE_LOG(Info) << "weights pushed" << kv("policy_version", update.policy_version)
                 << kv("dir", update.checkpoint_dir) << kv("workers", dispatcher.stats().workers);
  return Status::ok_status();
}

Result<std::vector<PhasePlan>> plan_phases(const DiceConfig& config,
                                           const std::map<TaskKind, PromptTemplate>& prompts) {
  const auto& wanted = config.learner.phases;
  for (const std::string& name : wanted) {
    bool known = false;
    for (const auto& phase : config.curriculum.phases) known |= phase.name == name;
    if (!known) {
      return Status::invalid_argument("learner.phases: no curriculum phase named '" + name + "'");
    }
  }
  std::vector<PhasePlan> plans;
  for (const CurriculumPhase& phase : config.curriculum.phases) {
    if (!wanted.empty() && std::find(wanted.begin(), wanted.end(), phase.name) == wanted.end()) {
      continue;
    }
    PhasePlan plan;
    plan.name = phase.name;
    plan.kind = phase.kind;
    plan.steps = phase.steps;
    plan.samples_per_task = phase.samples_per_task.value_or(config.learner.group_size);
    DICE_ASSIGN_OR_RETURN(plan.tasks, load_phase_tasks(phase, prompts));
    const int wanted_tasks = phase.tasks_per_step.value_or(config.learner.tasks_per_step);
    plan.tasks_per_step = std::min<int>(wanted_tasks, static_cast<int>(plan.tasks.size()));
    if (plan.tasks_per_step < wanted_tasks) {
      DICE_LOG(Warn) << "phase has fewer tasks than tasks_per_step; each step takes every task once"
                     << kv("phase", phase.name) << kv("tasks", plan.tasks.size())
                     << kv("tasks_per_step", wanted_tasks);
    }
    DICE_LOG(Info) << "phase planned" << kv("phase", plan.name) << kv("tasks", plan.tasks.size())
                   << kv("steps", plan.steps) << kv("tasks_per_step", plan.tasks_per_step)
                   << kv("samples_per_task", plan.samples_per_task);
    plans.push_back(std::move(plan));
  }
  return plans;
}

Result<RunSummary> run_phases(const std::vector<PhasePlan>& phases, const DiceConfig& config,
                              const RunLoopOptions& options, transport::WorkDispatcher& dispatcher,
                              rewardlog::RewardLogWriter& log, const LearnerMetrics& metrics,
                              const std::function<bool()>& stop_requested) {
  RunSummary summary;
  std::uint64_t next_work_id = 1;
  std::uint64_t next_group_id = 1;
  std::uint64_t global_step = 0;
  std::uint64_t policy_version = 0;
  std::string weights_dir;  // checkpoint folder of policy_version; empty: the initial policy
  std::unordered_set<std::string> seen_hashes;
  bool stopping = false;
  int total_steps = 0;
  for (const PhasePlan& plan : phases) total_steps += plan.steps;
  double seconds_so_far = 0.0;
  metrics.policy_version->set(static_cast<double>(policy_version));
  const char* update_mode = options.update ? "TraceRL" : kNoPolicyUpdate;
  DICE_LOG(Info) << "policy update: " << update_mode << kv("policy_version", policy_version)
                 << kv("phases", phases.size()) << kv("steps", total_steps);

  std::vector<TraceSample> traces;
  StepRun run{dispatcher, log, metrics, options, stop_requested, seen_hashes, &stopping, &traces};
  for (const PhasePlan& plan : phases) {
    TaskCursor cursor(&plan.tasks);
    for (int k = 1; k <= plan.steps; ++k, ++global_step) {
      if (stopping || stop_requested()) {
        summary.stopped = true;
        return summary;
      }
      StepSettings settings;
      settings.run_id = options.run_id;
      settings.learner_id = options.learner_id;
      settings.step = global_step;
      settings.samples_per_task = static_cast<std::uint32_t>(plan.samples_per_task);
      settings.policy_version = policy_version;
      settings.weights_dir = weights_dir;
      settings.max_staleness = static_cast<std::uint64_t>(config.learner.max_staleness);
      settings.drop_constant_groups = config.learner.loss.drop_constant_groups;
      settings.fill_sampling = sampling_filler(config.rollout.sampling);
      metrics.step->set(static_cast<double>(global_step));

      const auto started = Clock::now();
      StepTiming timing;
      timing.started_ms = wire::unix_millis_now();
      traces.clear();
      StepTracker tracker(settings, &next_work_id, &next_group_id);
      tracker.start(cursor.next(static_cast<std::size_t>(plan.tasks_per_step)), started);
      DICE_ASSIGN_OR_RETURN(bool interrupted, drive_step(tracker, run));
      DICE_RETURN_IF_ERROR(log.flush());  // every candidate of the step is durable
      timing.finished_ms = wire::unix_millis_now();
      const StepCounts& c = tracker.counts();
      if (interrupted) {
        summary.interrupted = true;
        summary.stopped = true;
        DICE_LOG(Warn) << "step cut short by the stop (drain timeout, or no worker left): its "
                          "verdicts are logged, no "
                          "StepRecord"
                       << kv("step", global_step) << kv("phase", plan.name)
                       << kv("verdicts", c.verdicts) << kv("groups_skipped", c.groups_skipped);
        return summary;
      }
      PolicyUpdate update;
      if (options.update && !traces.empty()) {
        DICE_ASSIGN_OR_RETURN(update,
                              options.update(std::move(traces), global_step, policy_version));
        traces.clear();
        if (update.ran) {
          policy_version = update.policy_version;
          weights_dir = update.checkpoint_dir;
          metrics.policy_version->set(static_cast<double>(policy_version));
          if (!update.checkpoint_dir.empty()) {
            DICE_RETURN_IF_ERROR(options.push_weights
                                     ? options.push_weights(update, dispatcher)
                                     : push_checkpoint_weights(dispatcher, options.learner_id,
                                                               options.run_id, update,
                                                               options.abort_in_flight));
          }
        }
      }
      timing.finished_ms = wire::unix_millis_now();
      DICE_ASSIGN_OR_RETURN(rewardlog::LogRecord step_rec,
                            step_record(c, settings, plan.kind, timing, update));
      DICE_ASSIGN_OR_RETURN(std::vector<rewardlog::LogRecord> records,
                            metric_records(c, settings, timing, update));
      records.push_back(std::move(step_rec));
      DICE_RETURN_IF_ERROR(log.append(std::move(records)));
      metrics.steps->add();
      ++summary.steps_completed;

      const double seconds = std::chrono::duration<double>(Clock::now() - started).count();
      seconds_so_far += seconds;
      const double eta =
          seconds_so_far / summary.steps_completed * (total_steps - summary.steps_completed);
      DICE_LOG(Info) << "step " << k << "/" << plan.steps << " of phase " << plan.name
                     << kv("step", global_step) << kv("candidates", c.verdicts)
                     << kv("candidates_per_s", fixed(c.candidates / std::max(seconds, 1e-3), 2))
                     << kv("correct_rate",
                           fixed(c.verdicts ? double(c.correct) / c.verdicts : 0, 3))
                     << kv("mean_reward", fixed(mean_reward(c), 3))
                     << kv("groups_dropped", c.groups_dropped)
                     << kv("groups_skipped", c.groups_skipped) << kv("stale", c.stale_dropped)
                     << kv("worker_errors", c.rollout_errors + c.eval_errors)
                     << kv("seconds", fixed(seconds, 1)) << kv("eta_s", fixed(eta, 0))
                     << kv("policy_version", policy_version)
                     << kv("loss", update.ran ? fixed(update.loss, 5) : std::string("-"))
                     << kv("update_s", fixed(update.seconds, 1))
                     << kv("policy_update", options.update ? "TraceRL" : kNoPolicyUpdate);
    }
  }
  return summary;
}

}  // namespace dice
