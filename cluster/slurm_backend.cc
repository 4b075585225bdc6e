#include "cluster/slurm_backend.h"

#include <ctime>
#include <filesystem>
#include <fstream>
#include <ostream>
#include <sstream>
#include <thread>

#include "cluster/command.h"
#include "cluster/local_backend.h"
#include "cluster/process.h"
#include "cluster/run_keys.h"
#include "cluster/service_plan.h"
#include "cluster/slurm_query.h"
#include "cluster/slurm_script.h"
#include "cluster/status_table.h"
#include "common/config/load.h"
#include "common/remove_tree.h"

namespace dice::cluster {
namespace {

// Slurm's client commands each cost a round trip to slurmctld: poll gently.
constexpr int kPollMs = 200;
constexpr int kOutputTailLines = 20;

void poll_pause() {
  std::this_thread::sleep_for(std::chrono::milliseconds(kPollMs));
}

std::string batch_output_path(const std::string& state_dir, const ClusterState& state) {
  return state_dir + "/slurm-" + state.slurm_job_id + ".out";
}

std::string file_tail(const std::string& path, int lines) {
  std::ostringstream out;
  ClusterState none;
  (void)print_logs(none, "batch", path, "batch", lines, out);
  return out.str();
}

std::string trim(const std::string& text) {
  std::size_t first = text.find_first_not_of(" \t\r\n");
  if (first == std::string::npos) return {};
  return text.substr(first, text.find_last_not_of(" \t\r\n") - first + 1);
}

Status write_text(const std::string& path, const std::string& text) {
  std::ofstream file(path, std::ios::trunc);
  file << text;
  file.flush();
  if (!file) return Status::io_error("cannot write " + path);
  return Status::ok_status();
}

// Brings `state` up to date: the job's state from squeue/sacct, each service's from its step file
// and its step id from squeue. Saves the result in the state file; returns what squeue said.
Result<SlurmJobInfo> refresh(const std::string& state_dir, ClusterState* state) {
  DICE_ASSIGN_OR_RETURN(SlurmJobInfo job, query_slurm_job(state->slurm_job_id));
  state->slurm_job_state = job.known ? job.state : "gone";
  if (job.known && !job.nodes.empty()) state->slurm_nodes = job.nodes;
  bool active = job.known && slurm_state_active(job.state);
  std::vector<SlurmStep> steps;
  if (active) {
    DICE_ASSIGN_OR_RETURN(steps, query_slurm_steps(state->slurm_job_id));
  }
  for (auto& s : state->services) {
    Status read = read_step_file(state_dir + "/steps/" + s.name, &s);
    if (!read.ok() && read.code() != StatusCode::kNotFound) return read;
    s.step.clear();
    for (const auto& step : steps) {
      if (step.name != s.name) continue;
      s.step = step.id;
      if (!step.nodes.empty()) s.node = step.nodes;
    }
    bool live = s.state == ServiceRunState::kRunning || s.state == ServiceRunState::kRestarting ||
                s.state == ServiceRunState::kStarting;
    if (!active && live) {
      // The job ended under it (cancelled, timed out, node failure) before the script could say.
      s.state = ServiceRunState::kStopped;
      if (s.last_exit.empty()) s.last_exit = "job " + state->slurm_job_state;
    }
  }
  // Written by the batch script when a role lost its last service (slurm_script.cc).
  std::ifstream reason(state_dir + "/steps/.stop_reason");
  if (reason) std::getline(reason, state->stop_reason);
  DICE_RETURN_IF_ERROR(write_state_file(state_dir, *state));
  return job;
}

Status refuse_if_active(const std::string& state_dir) {
  Result<ClusterState> previous = read_state_file(state_dir);
  if (!previous.ok()) return Status::ok_status();
  if (previous->backend == "local") {
    bool alive = process_alive(previous->supervisor_pid, previous->supervisor_start_ticks);
    for (const auto& s : previous->services) alive = alive || process_alive(s.pid, s.start_ticks);
    if (!alive) return Status::ok_status();
    return Status::unavailable("local run '" + previous->run_id + "' is already up in " +
                               state_dir + "; run `dice-cluster down --state-dir " + state_dir +
                               "` first");
  }
  return check_no_active_slurm_job(state_dir);
}

// The state folder's logs/ and an empty steps/.
Status prepare_state_dir(const std::string& state_dir) {
  std::error_code error;
  std::filesystem::create_directories(state_dir + "/logs", error);
  // Step files of an earlier run would read as this run's services having started.
  remove_tree(state_dir + "/steps").ignore();
  std::filesystem::create_directories(state_dir + "/steps", error);
  if (error) return Status::io_error("cannot prepare " + state_dir + ": " + error.message());
  return Status::ok_status();
}

// Submits the batch script; the job id sbatch prints.
Result<std::string> submit_batch_job(const std::string& script_path, const DiceConfig& config,
                                     const std::string& config_path) {
  std::vector<std::string> argv = {"sbatch", "--parsable", script_path};
  DICE_ASSIGN_OR_RETURN(CommandResult submitted, run_command(argv));
  std::string job_id = submitted.out.substr(0, submitted.out.find_first_of(";\n"));
  if (submitted.exit_code != 0 || job_id.empty() ||
      job_id.find_first_not_of("0123456789") != std::string::npos) {
    return Status::unavailable(
        "sbatch rejected " + script_path + " (exit " + std::to_string(submitted.exit_code) +
        "): " + trim(submitted.err + submitted.out) + " (partition cluster.slurm.partition='" +
        config.cluster.slurm.partition + "', see cluster.slurm in " + config_path + ")");
  }
  return job_id;
}

// The state of a just-submitted job: PENDING, each service not yet started.
ClusterState submitted_state(const DiceConfig& config, const std::string& config_path,
                             const std::string& run_id, const std::string& job_id,
                             const std::vector<ServiceSpec>& services,
                             const std::string& state_dir) {
  ClusterState state;
  state.backend = "slurm";
  state.run_id = run_id;
  state.config_path = config_path;
  state.supervisor_state = "slurm";
  state.drain_timeout_ms = config.cluster.slurm.down_timeout_s * 1000;
  state.slurm_job_id = job_id;
  state.slurm_job_state = "PENDING";
  for (const auto& spec : services) {
    ServiceState s;
    s.name = spec.name;
    s.role = spec.dashboard ? "dash" : config::enum_to_name(spec.role);
    s.node = spec.node;
    s.worker_index = spec.worker_index;
    s.log_path = state_dir + "/logs/" + spec.name + ".log";
    state.services.push_back(s);
  }
  return state;
}

// The names of the services not launched yet, each after a space.
std::string services_not_launched(const ClusterState& state) {
  // Launched: its step is listed, or it already ended (a crashing service may never be seen).
  std::string waiting;
  for (const auto& s : state.services) {
    bool launched = s.state != ServiceRunState::kStarting &&
                    (s.state != ServiceRunState::kRunning || !s.step.empty());
    if (!launched) waiting += " " + s.name;
  }
  return waiting;
}

// Polls the job until it runs with every service launched, or is still queued at the start
// timeout; an error when it ends first or runs without its services by then.
Result<ClusterState> wait_for_services(const DiceConfig& config, const std::string& state_dir,
                                       const std::string& job_id, ClusterState state) {
  std::int64_t deadline = monotonic_ms() + config.cluster.local.start_timeout_ms;
  while (true) {
    DICE_ASSIGN_OR_RETURN(SlurmJobInfo job, refresh(state_dir, &state));
    if (!slurm_state_active(state.slurm_job_state)) {
      std::string output = batch_output_path(state_dir, state);
      return Status::unavailable("slurm job " + job_id + " ended " + state.slurm_job_state +
                                 (job.reason.empty() ? "" : " (reason " + job.reason + ")") +
                                 " before its services started; batch output " + output + ":\n" +
                                 file_tail(output, kOutputTailLines));
    }
    const std::string waiting = services_not_launched(state);
    if (state.slurm_job_state == "RUNNING" && waiting.empty()) return state;
    if (monotonic_ms() >= deadline) {
      if (state.slurm_job_state == "PENDING") return state;  // queued: status will follow it
      return Status::timeout("slurm job " + job_id + " is " + state.slurm_job_state +
                             " but these services did not start within "
                             "cluster.local.start_timeout_ms=" +
                             std::to_string(config.cluster.local.start_timeout_ms) +
                             " ms:" + waiting + "; see " + batch_output_path(state_dir, state) +
                             " (stop with dice-cluster down --state-dir " + state_dir + ")");
    }
    poll_pause();
  }
}

}  // namespace

Status check_no_active_slurm_job(const std::string& state_dir) {
  Result<ClusterState> previous = read_state_file(state_dir);
  if (!previous.ok() || previous->backend != "slurm") return Status::ok_status();
  Result<SlurmJobInfo> job = query_slurm_job(previous->slurm_job_id);
  if (!job.ok()) {
    return job.status().with_context(state_dir + " holds slurm run '" + previous->run_id +
                                     "' (job " + previous->slurm_job_id +
                                     ") whose state cannot be checked");
  }
  if (!job->known || !slurm_state_active(job->state)) return Status::ok_status();
  return Status::unavailable("run '" + previous->run_id + "' is already up in " + state_dir +
                             " as slurm job " + previous->slurm_job_id + " (" + job->state +
                             "); run `dice-cluster down --state-dir " + state_dir + "` first");
}

Result<ClusterState> slurm_up(const DiceConfig& config, const std::string& config_path,
                              const std::vector<std::string>& overrides) {
  std::string state_dir = std::filesystem::absolute(resolve_state_dir(config)).string();
  if (find_on_path("sbatch").empty()) {
    return Status::not_found(
        "cluster.backend slurm: 'sbatch' not found on PATH; run dice-cluster on a Slurm "
        "submit host (Debian: apt-get install slurm-client)");
  }
  DICE_RETURN_IF_ERROR(refuse_if_active(state_dir));
  PlanInputs inputs{config_path, overrides,
                    config.run.id.empty() ? run_id_from_clock() : config.run.id, self_executable()};
  DICE_ASSIGN_OR_RETURN(std::vector<ServiceSpec> services, plan_services(config.cluster, inputs));

  DICE_RETURN_IF_ERROR(prepare_state_dir(state_dir));
  DICE_RETURN_IF_ERROR(
      add_transport_keys(config.cluster, state_dir, inputs.run_id, &services).status());
  if (config.cluster.dash.enabled) {
    // After the keys, as the local backend does: dice-dash takes no part in the transport.
    DICE_ASSIGN_OR_RETURN(
        ServiceSpec dash,
        plan_dashboard(config.cluster, config.run.reward_log_path, inputs.self_exe));
    services.push_back(std::move(dash));
  }

  std::string script_path = state_dir + "/job.sbatch";
  std::string work_dir = config::working_directory();
  DICE_RETURN_IF_ERROR(
      write_text(script_path,
                 slurm_batch_script(config.cluster, services, work_dir, state_dir, inputs.run_id)));
  DICE_ASSIGN_OR_RETURN(std::string job_id, submit_batch_job(script_path, config, config_path));

  ClusterState state =
      submitted_state(config, config_path, inputs.run_id, job_id, services, state_dir);
  DICE_RETURN_IF_ERROR(write_state_file(state_dir, state));
  return wait_for_services(config, state_dir, job_id, std::move(state));
}

Status slurm_status(const std::string& state_dir, std::ostream& out) {
  DICE_ASSIGN_OR_RETURN(ClusterState state, read_state_file(state_dir));
  DICE_RETURN_IF_ERROR(refresh(state_dir, &state).status());
  std::string note;
  const auto health = learner_health(state, &note);
  out << format_status(state, wall_seconds(), health, note);
  return Status::ok_status();
}

Status slurm_logs(const std::string& state_dir, const std::string& service, int lines,
                  std::ostream& out) {
  DICE_ASSIGN_OR_RETURN(ClusterState state, read_state_file(state_dir));
  return print_logs(state, "batch", batch_output_path(state_dir, state), service, lines, out);
}

Status slurm_down(const std::string& state_dir, std::ostream& out) {
  DICE_ASSIGN_OR_RETURN(ClusterState state, read_state_file(state_dir));
  // Services live now are stopped by this down, whatever exit status their SIGTERM brings.
  DICE_RETURN_IF_ERROR(refresh(state_dir, &state).status());
  std::vector<bool> was_live;
  for (const auto& s : state.services) {
    was_live.push_back(s.state == ServiceRunState::kRunning ||
                       s.state == ServiceRunState::kRestarting ||
                       s.state == ServiceRunState::kStarting);
  }
  std::vector<std::string> argv = {"scancel", state.slurm_job_id};
  DICE_ASSIGN_OR_RETURN(CommandResult cancelled, run_command(argv));
  if (cancelled.exit_code != 0 && cancelled.err.find("Invalid job id") == std::string::npos) {
    return Status::unavailable("`" + command_line(argv) + "` failed (exit " +
                               std::to_string(cancelled.exit_code) + "): " + cancelled.err);
  }
  std::int64_t deadline = monotonic_ms() + state.drain_timeout_ms;
  while (true) {
    DICE_ASSIGN_OR_RETURN(SlurmJobInfo job, query_slurm_job(state.slurm_job_id));
    if (!job.known || !slurm_state_active(job.state)) break;
    if (monotonic_ms() >= deadline) {
      return Status::timeout("slurm job " + state.slurm_job_id + " still " + job.state + " " +
                             std::to_string(state.drain_timeout_ms / 1000) +
                             " s after scancel (cluster.slurm.down_timeout_s); check squeue -j " +
                             state.slurm_job_id + " and the slurmctld log");
    }
    poll_pause();
  }
  DICE_RETURN_IF_ERROR(refresh(state_dir, &state).status());
  for (std::size_t i = 0; i < state.services.size(); ++i) {
    if (was_live[i]) state.services[i].state = ServiceRunState::kStopped;
    state.services[i].step.clear();
  }
  DICE_RETURN_IF_ERROR(write_state_file(state_dir, state));
  out << "down: run '" << state.run_id << "' stopped; slurm job " << state.slurm_job_id << " "
      << state.slurm_job_state << " (state dir " << state_dir << ")\n";
  return Status::ok_status();
}

}  // namespace dice::cluster
