#include "learner/run/learner_service.h"

#include <unistd.h>

#include <iostream>
#include <optional>
#include <random>
#include <thread>

#include "common/disk_space.h"
#include "common/exit_codes.h"
#include "common/log.h"
#include "learner/resume/resume_plan.h"
#include "learner/resume/resume_store.h"
#include "learner/run/policy_updater.h"
#include "learner/run/run_loop.h"
#include "learner/train/sft_run.h"
#include "net/service/metrics_server.h"
#include "net/service/shutdown_signal.h"
#include "net/service/transport_metrics.h"
#include "net/service/transport_security.h"
#include "net/transport/work_dispatcher.h"
#include "net/wire/envelope.h"
#include "rewardlog/reader.h"
#include "rewardlog/writer.h"

#ifndef DICE_GIT_REVISION
#define DICE_GIT_REVISION ""
#endif

namespace dice {
namespace {

// Where the run's resume folder lives (learner/resume/resume_store.h).
std::string resume_dir_of(const DiceConfig& config) {
  return config.learner.checkpoint.dir + "/" + config.run.id;
}

int fail(int code, const std::string& what, const Status& status) {
  DICE_LOG(Error) << what << kv("error", status.to_string());
  std::cerr << "dice-learner: " << what << ": " << status.to_string() << "\n";
  return code;
}

std::string host_name() {
  char name[256] = {};
  if (gethostname(name, sizeof(name) - 1) != 0 || name[0] == '\0') return "localhost";
  return name;
}

// The run's RunRecord in the log, if the log holds one under `run_id` (a run to resume, or an
// id a new run must not reuse).
struct ExistingRun {
  bool exists = false;
  std::int64_t started_ms = 0;
  std::string note;
};
Result<ExistingRun> find_run(const std::string& log_path, const std::string& run_id) {
  rewardlog::RewardLogReaderOptions options;
  options.path = log_path;
  auto reader = rewardlog::RewardLogReader::open(options);
  if (reader.status().code() == StatusCode::kNotFound) return ExistingRun{};
  DICE_RETURN_IF_ERROR(reader.status());
  auto existing = (*reader)->run(run_id);
  if (existing.status().code() == StatusCode::kNotFound) return ExistingRun{};
  DICE_RETURN_IF_ERROR(existing.status());
  return ExistingRun{true, existing->get().getStartedUnixMillis(),
                     existing->get().getNote().cStr()};
}

// A second run under the same id would silently mix its records with the first one's.
Status refuse_existing_run(const std::string& log_path, const std::string& run_id,
                           bool can_resume) {
  return Status::invalid_argument(
      "reward log " + log_path + " already holds run '" + run_id + "'; " +
      (can_resume ? "continue it with --resume, or give a new run id (--run-id ID or run.id)"
                  : "learner.mode sft cannot resume a run: give a new run id (--run-id ID or "
                    "run.id) or move the log away"));
}

Status write_run_record(rewardlog::RewardLogWriter& log, const DiceConfig& config,
                        const ExistingRun& resumed, const std::string& resume_note) {
  capnp::MallocMessageBuilder message;
  auto record = message.initRoot<schema::RunRecord>();
  record.setRunId(config.run.id);
  record.setStartedUnixMillis(resumed.exists ? resumed.started_ms : wire::unix_millis_now());
  record.setConfigYaml(print_dice_config(config));
  record.setGitRevision(DICE_GIT_REVISION);
  record.setHost(host_name());
  std::string note = config.learner.mode == TrainMode::kSft ? std::string("SFT")
                     : config.learner.update_policy
                         ? std::string("policy update: TraceRL")
                         : std::string("policy update: ") + kNoPolicyUpdate +
                               " (rollouts, verdicts and advantages are real)";
  if (config.reward.mode != RewardMode::kFull) {
    note += "; reward.mode " + dice::config::enum_to_name(config.reward.mode) +
            ": no GPU judged these candidates, so no reward means a correct kernel";
  }
  if (resumed.exists) note = resumed.note + "; " + resume_note;
  record.setNote(note);
  return log.append_record(record.asReader());
}

// The run's reward log, opened with its RunRecord written (for a resumed run: its note
// extended by `resume_note`); on failure the exit code to use and the status.
struct OpenedLog {
  std::unique_ptr<rewardlog::RewardLogWriter> log;
  int exit_code = 0;
  Status status;
};
OpenedLog open_run_log(const DiceConfig& config, const ExistingRun& resumed = {},
                       const std::string& resume_note = "") {
  OpenedLog out;
  rewardlog::RewardLogOptions log_options;
  log_options.path = config.run.reward_log_path;
  // run.min_free_disk_mb is what checkpoints leave for the writers that cannot check first; the
  // log writes into it down to a quarter (256 MiB by default), kept for RocksDB's own work: four
  // 64 MiB level-0 files (its defaults) start a compaction that rewrites about that much.
  log_options.min_free_bytes =
      static_cast<std::uint64_t>(config.run.min_free_disk_mb) * kBytesPerMiB / 4;
  log_options.min_free_name = "a quarter of run.min_free_disk_mb";
  auto log = rewardlog::RewardLogWriter::open(log_options);
  if (!log.ok()) {
    out.exit_code = kExitFailure;
    out.status = log.status();
    return out;
  }
  Status recorded = write_run_record(**log, config, resumed, resume_note);
  if (!recorded.ok()) {
    out.exit_code = is_disk_space_shortage(recorded) ? kExitNoDiskSpace : kExitFailure;
    out.status = recorded;
    return out;
  }
  out.log = std::move(log).value();
  DICE_LOG(Info) << "reward log open" << kv("path", log_options.path) << kv("run", config.run.id)
                 << kv("resumed", resumed.exists);
  return out;
}

// What --resume found: the run in the log (or none: a new run), where to continue from (a run
// without a resume folder starts over), and the note for its RunRecord.
struct ResumeSetup {
  ExistingRun run;
  std::optional<ResumePoint> point;
  std::string note;
};
Result<ResumeSetup> find_resume(const DiceConfig& config, const std::vector<PhasePlan>& phases,
                                const std::string& resume_dir) {
  ResumeSetup out;
  DICE_ASSIGN_OR_RETURN(out.run, find_run(config.run.reward_log_path, config.run.id));
  if (!out.run.exists) {
    DICE_LOG(Info) << "--resume: the reward log holds no run " + config.run.id + ": a new run";
    return out;
  }
  auto point = read_resume(resume_dir);
  if (point.status().code() == StatusCode::kNotFound) {
    DICE_LOG(Warn) << "--resume: the run has no resume folder (it stopped before its first one "
                      "was written): it starts over, its records erased"
                   << kv("dir", resume_dir);
    ResumePoint fresh;
    fresh.position.run_id = config.run.id;
    point = std::move(fresh);
  }
  DICE_RETURN_IF_ERROR(point.status());
  if (point->position.run_id != config.run.id) {
    return Status::invalid_argument(point->dir + "/position.json is of run '" +
                                    point->position.run_id + "', not '" + config.run.id + "'");
  }
  out.point = std::move(point).value();
  const RunPosition& p = out.point->position;
  out.note = "resumed at step " + std::to_string(p.next_step) + " (restart " +
             std::to_string(p.resumes + 1) + ")";
  const ResumePlan plan = plan_resume(p, phases);
  for (std::size_t i = 0; i < plan.changes.size(); ++i) {
    out.note += (i == 0 ? ", curriculum changed: " : "; ") + plan.changes[i];
  }
  return out;
}

// learner.seed as the run uses it: the config's, else the one the run drew before a restart,
// else a fresh one (kept in every resume folder).
std::uint64_t run_seed(const LearnerOptions& learner, const std::optional<ResumePoint>& point) {
  if (learner.seed != 0) return learner.seed;
  if (point && point->position.seed != 0) return point->position.seed;
  std::random_device device;
  return (static_cast<std::uint64_t>(device()) << 32) | device();
}

// Tells every worker to finish and exit. The dispatcher sends from its own thread and drops what
// is unsent at close(), so give that thread a few poll rounds first (see the report: a
// close-after-flush in WorkDispatcher would make this wait unnecessary).
void shut_down_workers(transport::WorkDispatcher& dispatcher, const DiceConfig& config,
                       const std::string& reason) {
  capnp::MallocMessageBuilder message;
  auto shutdown = wire::init_envelope(message, "learner", config.run.id).getBody().initShutdown();
  shutdown.setDrain(true);
  shutdown.setReason(reason);
  Status sent = dispatcher.broadcast_shutdown(wire::encode(message));
  if (!sent.ok()) {
    DICE_LOG(Warn) << "cannot broadcast Shutdown" << kv("error", sent.to_string());
    return;
  }
  const int poll_ms = std::clamp(config.cluster.heartbeat.interval_ms / 4, 1, 250);
  std::this_thread::sleep_for(std::chrono::milliseconds(4 * poll_ms));
  DICE_LOG(Info) << "Shutdown sent to workers" << kv("workers", dispatcher.stats().workers)
                 << kv("reason", reason);
}

// Bad input for a missing or invalid file or setting, no disk space for a disk that filled,
// else a failure.
int input_exit_code(const Status& status) {
  if (is_disk_space_shortage(status)) return kExitNoDiskSpace;
  const StatusCode code = status.code();
  return code == StatusCode::kInvalidArgument || code == StatusCode::kNotFound ? kExitBadInput
                                                                               : kExitFailure;
}

// /metrics at the learner's bind address (service::learner_bind_address), at --metrics-port or
// cluster.learner.metrics_port.
Result<service::MetricsServerOptions> learner_metrics_options(
    const service::ServiceContext& context) {
  service::MetricsServerOptions metrics_options;
  DICE_ASSIGN_OR_RETURN(metrics_options.host,
                        service::learner_bind_address(context.config.cluster));
  metrics_options.port = static_cast<std::uint16_t>(
      context.metrics_port.value_or(context.config.cluster.learner.metrics_port));
  return metrics_options;
}

// The work socket at the learner's bind address, with CURVE where the run has it.
Result<transport::DispatcherOptions> dispatcher_options_for(
    const service::ServiceContext& context) {
  const DiceConfig& config = context.config;
  transport::DispatcherOptions dispatcher_options;
  DICE_ASSIGN_OR_RETURN(const std::string address, service::learner_bind_address(config.cluster));
  dispatcher_options.bind_endpoint = service::tcp_endpoint(address, config.cluster.learner.port);
  DICE_ASSIGN_OR_RETURN(dispatcher_options.curve, service::learner_curve(context));
  dispatcher_options.run_id = config.run.id;
  transport::apply_cluster_settings(config.cluster, dispatcher_options);
  return dispatcher_options;
}

void warn_if_drain_outlasts_local_cluster(const DiceConfig& config) {
  if (config.cluster.backend == ClusterBackend::kLocal &&
      config.learner.drain_timeout_seconds * 1000 > config.cluster.local.drain_timeout_ms) {
    DICE_LOG(Warn) << "dice-cluster down kills the learner before its drain can end; what was "
                      "written to the reward log stays"
                   << kv("learner.drain_timeout_seconds", config.learner.drain_timeout_seconds)
                   << kv("cluster.local.drain_timeout_ms", config.cluster.local.drain_timeout_ms);
  }
}

RunLoopOptions run_loop_options(const DiceConfig& config, PolicyStages stages,
                                WeightsPusher push_weights, std::optional<ResumePoint> resume) {
  RunLoopOptions loop_options;
  loop_options.resume_dir = resume_dir_of(config);
  loop_options.min_free_disk_bytes =
      static_cast<std::uint64_t>(config.run.min_free_disk_mb) * kBytesPerMiB;
  loop_options.state_interval_steps = config.learner.checkpoint.state_interval_steps;
  loop_options.save_state = std::move(stages.save_state);
  loop_options.load_state = std::move(stages.load_state);
  loop_options.seed = config.learner.seed;
  loop_options.resume = std::move(resume);
  loop_options.run_id = config.run.id;
  loop_options.group_timeout = std::chrono::milliseconds(
      static_cast<std::int64_t>(config.learner.group_timeout_seconds * 1000));
  loop_options.drain_timeout = std::chrono::milliseconds(
      static_cast<std::int64_t>(config.learner.drain_timeout_seconds * 1000));
  loop_options.update = std::move(stages.update);
  loop_options.sft = std::move(stages.sft);
  loop_options.finish_phase = std::move(stages.finish_phase);
  loop_options.start_phase = std::move(stages.start_phase);
  loop_options.abort_in_flight = config.rollout.abort_on_weight_update;
  loop_options.push_weights = std::move(push_weights);
  loop_options.reward_mode = dice::config::enum_to_name(config.reward.mode);
  return loop_options;
}

// learner.mode sft: no workers, no socket; the reward log gets the RunRecord and the SFT metric
// series, /metrics the progress.
int run_sft_service(service::ServiceContext& context) {
  const DiceConfig& config = context.config;
  auto shutdown = service::ShutdownSignal::install();
  if (!shutdown.ok()) return fail(kExitFailure, "signal handlers", shutdown.status());
  service::MetricsRegistry registry;
  auto metrics_options = learner_metrics_options(context);
  if (!metrics_options.ok()) return fail(kExitBadInput, "/metrics", metrics_options.status());
  auto server = service::MetricsServer::start(*metrics_options, &registry);
  if (!server.ok()) return fail(kExitFailure, "/metrics", server.status());
  auto existing = find_run(config.run.reward_log_path, config.run.id);
  if (!existing.ok()) return fail(kExitFailure, "reward log", existing.status());
  if (existing->exists) {
    return fail(kExitBadInput, "reward log",
                refuse_existing_run(config.run.reward_log_path, config.run.id, false));
  }
  OpenedLog opened = open_run_log(config);
  if (!opened.log) return fail(opened.exit_code, "reward log", opened.status);
  rewardlog::RewardLogWriter& log = *opened.log;
  service::ShutdownSignal& signal = **shutdown;
  auto summary = run_sft(config, log, registry, [&signal] { return signal.requested(); });
  Status closed = log.close();
  (*server)->stop();
  if (!summary.ok()) return fail(input_exit_code(summary.status()), "SFT", summary.status());
  if (!closed.ok()) return fail(kExitFailure, "reward log close", closed);
  DICE_LOG(Info) << "SFT done" << kv("steps", summary->steps) << kv("stopped", summary->stopped)
                 << kv("checkpoint", summary->checkpoint);
  return 0;
}

}  // namespace

int run_learner_service(service::ServiceContext& context) {
  const DiceConfig& config = context.config;
  if (config.learner.mode == TrainMode::kSft) return run_sft_service(context);
  auto prompts = load_prompt_templates(config.rollout.prompt_templates);
  if (!prompts.ok()) return fail(kExitBadInput, "prompt templates", prompts.status());
  auto phases = plan_phases(config, prompts.value());
  if (!phases.ok()) return fail(kExitBadInput, "curriculum", phases.status());

  // A run the log holds already goes on only with --resume; the seed is settled before the
  // policy stages read it.
  ResumeSetup resume;
  if (context.resume) {
    auto found = find_resume(config, phases.value(), resume_dir_of(config));
    if (!found.ok()) return fail(input_exit_code(found.status()), "--resume", found.status());
    resume = std::move(found).value();
  } else {
    auto existing = find_run(config.run.reward_log_path, config.run.id);
    if (!existing.ok()) return fail(kExitFailure, "reward log", existing.status());
    if (existing->exists) {
      return fail(kExitBadInput, "reward log",
                  refuse_existing_run(config.run.reward_log_path, config.run.id, true));
    }
  }
  context.config.learner.seed = run_seed(config.learner, resume.point);

  auto shutdown = service::ShutdownSignal::install();
  if (!shutdown.ok()) return fail(kExitFailure, "signal handlers", shutdown.status());

  // The policy before the socket: a model that does not load is bad input, found at once.
  PolicyStages stages;
  WeightsPusher push_weights;  // the run's way of pushing weights (learner/push/)
  if (config.learner.update_policy) {
    auto made = make_policy_stages(config, &push_weights);
    if (!made.ok()) return fail(input_exit_code(made.status()), "policy", made.status());
    stages = std::move(made).value();
  }

  // The work socket first: a run that cannot be reached is not worth a RunRecord.
  auto dispatcher_options = dispatcher_options_for(context);
  if (!dispatcher_options.ok()) {
    return fail(input_exit_code(dispatcher_options.status()), "work socket",
                dispatcher_options.status());
  }
  auto dispatcher = transport::WorkDispatcher::start(std::move(dispatcher_options).value());
  if (!dispatcher.ok()) return fail(kExitFailure, "work socket", dispatcher.status());
  DICE_LOG(Info) << "learner listening for workers" << kv("endpoint", (*dispatcher)->endpoint());

  service::MetricsRegistry registry;
  auto metrics = LearnerMetrics::create(registry);
  if (!metrics.ok()) return fail(kExitFailure, "metrics", metrics.status());
  auto metrics_made = learner_metrics_options(context);
  if (!metrics_made.ok()) return fail(kExitBadInput, "/metrics", metrics_made.status());
  service::MetricsServerOptions metrics_options = std::move(metrics_made).value();
  transport::WorkDispatcher* dispatcher_ptr = dispatcher->get();
  metrics_options.before_scrape = [dispatcher_ptr, &registry] {
    service::export_dispatcher_stats(dispatcher_ptr->stats(), "dice_learner_transport", &registry)
        .ignore();
  };
  auto server = service::MetricsServer::start(metrics_options, &registry);
  if (!server.ok()) return fail(kExitFailure, "/metrics", server.status());
  DICE_LOG(Info) << "serving /metrics" << kv("port", (*server)->port());

  OpenedLog opened = open_run_log(config, resume.run, resume.note);
  if (!opened.log) return fail(opened.exit_code, "reward log", opened.status);
  std::unique_ptr<rewardlog::RewardLogWriter>& log = opened.log;

  warn_if_drain_outlasts_local_cluster(config);
  RunLoopOptions loop_options =
      run_loop_options(config, std::move(stages), std::move(push_weights), std::move(resume.point));
  service::ShutdownSignal& signal = **shutdown;
  auto summary = run_phases(phases.value(), config, loop_options, **dispatcher, *log,
                            metrics.value(), [&signal] { return signal.requested(); });

  const std::string reason = !summary.ok()      ? "learner failed"
                             : summary->stopped ? "learner stopped"
                                                : "run finished";
  shut_down_workers(**dispatcher, config, reason);
  (*dispatcher)->close();
  Status closed = log->close();
  (*server)->stop();
  if (!summary.ok()) {
    return fail(is_disk_space_shortage(summary.status()) ? kExitNoDiskSpace : kExitFailure,
                "run loop", summary.status());
  }
  if (!closed.ok()) return fail(kExitFailure, "reward log close", closed);
  DICE_LOG(Info) << "learner done" << kv("steps", summary->steps_completed)
                 << kv("stopped", summary->stopped) << kv("interrupted", summary->interrupted)
                 << kv("policy_update", config.learner.update_policy ? "TraceRL" : kNoPolicyUpdate);
  return 0;
}

}  // namespace dice
