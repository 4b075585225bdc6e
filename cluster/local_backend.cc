#include "cluster/local_backend.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <ostream>
#include <sstream>
#include <thread>

#include "cluster/process.h"
#include "cluster/run_keys.h"
#include "cluster/service_plan.h"
#include "cluster/ssh_backend.h"
#include "cluster/status_table.h"
#include "cluster/supervisor.h"
#include "common/log.h"

namespace dice::cluster {
namespace {

constexpr int kPollMs = 20;
// Extra time `down` gives the supervisor beyond its drain timeout before SIGKILLing everything.
constexpr int kDownGraceMs = 5000;

void poll_pause() {
  std::this_thread::sleep_for(std::chrono::milliseconds(kPollMs));
}

Status make_dirs(const std::string& path) {
  std::error_code error;
  std::filesystem::create_directories(path, error);
  if (error) return Status::io_error("cannot create folder " + path + ": " + error.message());
  return Status::ok_status();
}

bool supervisor_alive(const ClusterState& state) {
  return process_alive(state.supervisor_pid, state.supervisor_start_ticks);
}

// Daemonises (fork, setsid, fork) and runs the supervisor in the grandchild; returns in the caller
// once the intermediate child has exited.
Status start_supervisor_daemon(SupervisorSetup setup, const std::string& log_path) {
  pid_t child = fork();
  if (child < 0) return Status::io_error(std::string("fork: ") + std::strerror(errno));
  if (child == 0) {
    setsid();
    if (fork() != 0) _exit(0);
    int null_fd = open("/dev/null", O_RDONLY);
    int log_fd = open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (null_fd >= 0) dup2(null_fd, STDIN_FILENO);
    if (log_fd >= 0) {
      dup2(log_fd, STDOUT_FILENO);
      dup2(log_fd, STDERR_FILENO);
    }
    LogOptions log = log_options();
    log.run_id = setup.state.run_id;
    log_configure(log);
    int code = run_supervisor(std::move(setup));
    std::fflush(nullptr);
    _exit(code);
  }
  int status = 0;
  while (waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  return Status::ok_status();
}

}  // namespace

std::string resolve_state_dir(const DiceConfig& config) {
  if (!config.cluster.local.state_dir.empty()) return config.cluster.local.state_dir;
  const std::string& log = config.run.reward_log_path;
  std::size_t slash = log.rfind('/');
  std::string run_dir = slash == std::string::npos ? "." : log.substr(0, slash);
  return run_dir + "/cluster";
}

Result<ClusterState> local_up(const DiceConfig& config, const std::string& config_path,
                              const std::vector<std::string>& overrides) {
  const LocalOptions& local = config.cluster.local;
  std::string state_dir = resolve_state_dir(config);
  Result<ClusterState> previous = read_state_file(state_dir);
  if (previous.ok()) {
    // A live supervisor, or services it left behind (it was killed), still belong to that run.
    bool any_alive = supervisor_alive(*previous);
    for (const auto& s : previous->services) {
      any_alive = any_alive || process_alive(s.pid, s.start_ticks);
    }
    if (any_alive) {
      return Status::unavailable("run '" + previous->run_id + "' is already up in " + state_dir +
                                 " (supervisor pid " + std::to_string(previous->supervisor_pid) +
                                 "); run `dice-cluster down --state-dir " + state_dir + "` first");
    }
  }

  PlanInputs inputs{config_path, overrides,
                    config.run.id.empty() ? run_id_from_clock() : config.run.id, self_executable()};
  DICE_ASSIGN_OR_RETURN(std::vector<ServiceSpec> services, plan_services(config.cluster, inputs));
  DICE_RETURN_IF_ERROR(make_dirs(state_dir + "/logs"));
  DICE_RETURN_IF_ERROR(
      add_transport_keys(config.cluster, state_dir, inputs.run_id, &services).status());
  if (config.cluster.dash.enabled) {
    // After the keys: dice-dash reads the log, it takes no part in the transport.
    DICE_ASSIGN_OR_RETURN(
        ServiceSpec dash,
        plan_dashboard(config.cluster, config.run.reward_log_path, inputs.self_exe));
    services.push_back(std::move(dash));
  }

  SupervisorSetup setup;
  setup.state.backend = config::enum_to_name(config.cluster.backend);
  setup.state_dir = state_dir;
  setup.local = local;
  setup.state.run_id = inputs.run_id;
  setup.state.config_path = config_path;
  setup.state.drain_timeout_ms = local.drain_timeout_ms;
  for (const auto& spec : services) {
    ServiceState s;
    s.name = spec.name;
    s.role = spec.dashboard ? "dash" : config::enum_to_name(spec.role);
    s.node = spec.node;
    s.worker_index = spec.worker_index;
    s.log_path = state_dir + "/logs/" + spec.name + ".log";
    setup.state.services.push_back(s);
  }
  if (config.cluster.backend == ClusterBackend::kSsh) {
    DICE_ASSIGN_OR_RETURN(
        services, ssh_services(config, services, state_dir, inputs.run_id, &setup.state.services));
  }
  setup.services = std::move(services);
  // A fresh file before the daemon starts, so everything read below is this run's.
  DICE_RETURN_IF_ERROR(write_state_file(state_dir, setup.state));
  std::string supervisor_log = state_dir + "/logs/supervisor.log";
  DICE_RETURN_IF_ERROR(start_supervisor_daemon(std::move(setup), supervisor_log));

  std::int64_t deadline = monotonic_ms() + local.start_timeout_ms;
  while (true) {
    Result<ClusterState> state = read_state_file(state_dir);
    if (state.ok() && state->supervisor_pid != 0) {
      if (!supervisor_alive(*state)) {
        return Status::unavailable("the supervisor (pid " + std::to_string(state->supervisor_pid) +
                                   ") exited during start-up; see " + supervisor_log);
      }
      bool all_launched = true;
      for (const auto& s : state->services) {
        all_launched = all_launched && s.state != ServiceRunState::kStarting;
      }
      if (all_launched) return state;
    }
    if (monotonic_ms() >= deadline) {
      return Status::timeout("services not all started within cluster.local.start_timeout_ms=" +
                             std::to_string(local.start_timeout_ms) + " ms; see " + supervisor_log +
                             " (stop with dice-cluster down --state-dir " + state_dir + ")");
    }
    poll_pause();
  }
}

Status local_down(const std::string& state_dir, std::ostream& out) {
  DICE_ASSIGN_OR_RETURN(ClusterState state, read_state_file(state_dir));
  bool supervisor_was_up = supervisor_alive(state);
  if (supervisor_was_up) kill(state.supervisor_pid, SIGTERM);
  std::int64_t kill_at = monotonic_ms() + state.drain_timeout_ms + kDownGraceMs;
  std::int64_t give_up_at = kill_at + kDownGraceMs;
  bool killed = false;
  while (true) {
    // Re-read: the supervisor records each service's end as it drains.
    Result<ClusterState> latest = read_state_file(state_dir);
    if (latest.ok()) state = *latest;
    std::vector<std::pair<pid_t, std::string>> alive;
    if (supervisor_alive(state)) alive.emplace_back(state.supervisor_pid, "supervisor");
    for (const auto& s : state.services) {
      if (process_alive(s.pid, s.start_ticks)) alive.emplace_back(s.pid, s.name);
    }
    if (alive.empty()) break;
    std::int64_t now = monotonic_ms();
    if (!killed && (now >= kill_at || !supervisor_was_up)) {
      // The supervisor did not drain in time (or is gone, leaving orphans): SIGKILL everything.
      for (const auto& [pid, name] : alive) {
        out << "down: " << name << " (pid " << pid << ") still running; SIGKILL\n";
        kill(pid, SIGKILL);
      }
      killed = true;
    }
    if (now >= give_up_at) {
      std::string names;
      for (const auto& [pid, name] : alive)
        names += " " + name + "(pid " + std::to_string(pid) + ")";
      return Status::timeout("processes of run '" + state.run_id + "' survived SIGKILL:" + names);
    }
    poll_pause();
  }
  // ssh runs: the supervisor drained its nodes; check them, and stop what a killed supervisor or a
  // lost link left there.
  DICE_RETURN_IF_ERROR(stop_remote_services(state, state.drain_timeout_ms, out));
  out << "down: run '" << state.run_id << "' stopped; no process of it remains (state dir "
      << state_dir << ")\n";
  return Status::ok_status();
}

Status local_status(const std::string& state_dir, std::ostream& out) {
  DICE_ASSIGN_OR_RETURN(ClusterState state, read_state_file(state_dir));
  std::string remote_note;
  if (state.backend == "ssh") {
    // The pid of each service on its node (the table's PID column), one ssh per node.
    Result<std::map<std::string, pid_t>> remote = sweep_remote(state.run_id, state.services, "0");
    if (remote.ok()) {
      for (auto& s : state.services) {
        auto found = remote->find(s.name);
        s.remote_pid = found == remote->end() ? 0 : found->second;
      }
    } else {
      remote_note = "(pids on the nodes unknown: " + remote.status().message() + ")\n";
    }
  }
  std::string note;
  const auto health = learner_health(state, &note);
  out << format_status(state, wall_seconds(), health, note) << remote_note;
  return Status::ok_status();
}

Status local_logs(const std::string& state_dir, const std::string& service, int lines,
                  std::ostream& out) {
  DICE_ASSIGN_OR_RETURN(ClusterState state, read_state_file(state_dir));
  return print_logs(state, "supervisor", state_dir + "/logs/supervisor.log", service, lines, out);
}

}  // namespace dice::cluster
