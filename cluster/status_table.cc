#include "cluster/status_table.h"

#include <deque>
#include <fstream>
#include <iomanip>
#include <ostream>
#include <sstream>
#include <vector>

#include "cluster/process.h"
#include "options/dice_config.h"

namespace dice::cluster {
namespace {

std::vector<std::string> tail_lines(const std::string& path, int lines) {
  std::ifstream in(path);
  std::deque<std::string> last;
  std::string line;
  while (std::getline(in, line)) {
    last.push_back(line);
    if (static_cast<int>(last.size()) > lines) last.pop_front();
  }
  return {last.begin(), last.end()};
}

std::string header(const ClusterState& state, double now) {
  std::ostringstream out;
  if (state.backend == "slurm") {
    out << "run " << state.run_id << "  slurm job " << state.slurm_job_id << " "
        << (state.slurm_job_state.empty() ? "unknown" : state.slurm_job_state);
    if (!state.slurm_nodes.empty()) out << " on " << state.slurm_nodes;
    out << "\n";
  } else {
    bool up = process_alive(state.supervisor_pid, state.supervisor_start_ticks);
    out << "run " << state.run_id << "  supervisor pid " << state.supervisor_pid << " "
        << (up ? state.supervisor_state : std::string("not running")) << "  up "
        << (up ? format_duration(now - state.supervisor_started_at) : std::string("-")) << "\n";
  }
  if (!state.stop_reason.empty()) out << "stopped by the supervisor: " << state.stop_reason << "\n";
  return out.str();
}

}  // namespace

std::string format_duration(double seconds) {
  long s = static_cast<long>(seconds);
  std::ostringstream out;
  if (s >= 86400) {
    out << s / 86400 << "d" << (s % 86400) / 3600 << "h";
  } else if (s >= 3600) {
    out << s / 3600 << "h" << (s % 3600) / 60 << "m";
  } else if (s >= 60) {
    out << s / 60 << "m" << s % 60 << "s";
  } else {
    out << s << "s";
  }
  return out.str();
}

std::string format_status(const ClusterState& state, double now,
                          const std::map<std::string, WorkerHealth>& health,
                          const std::string& health_note) {
  bool slurm = state.backend == "slurm";
  std::ostringstream out;
  out << header(state, now);
  out << std::left << std::setw(14) << "SERVICE" << std::setw(14) << "NODE" << std::setw(12)
      << (slurm ? "STEP" : "PID") << std::setw(12) << "STATE" << std::setw(10) << "RESTARTS"
      << std::setw(10) << "UPTIME" << std::setw(11) << "HEARTBEAT" << std::setw(8) << "DONE"
      << "LAST EXIT\n";
  for (const auto& s : state.services) {
    bool running = s.state == ServiceRunState::kRunning;
    bool alive = running && (slurm || process_alive(s.pid, s.start_ticks));
    std::string shown = running && !alive ? "gone" : run_state_name(s.state);
    std::string id = slurm ? (s.step.empty() ? "-" : s.step) : std::to_string(s.pid);
    if (state.backend == "ssh") id = s.remote_pid > 0 ? std::to_string(s.remote_pid) : "-";
    out << std::left << std::setw(14) << s.name << std::setw(14) << s.node << std::setw(12)
        << (alive ? id : "-") << std::setw(12) << shown << std::setw(10) << s.restarts
        << std::setw(10) << (alive ? format_duration(now - s.started_at) : "-");
    auto h = health.find(s.name);
    const bool seen = h != health.end();
    out << std::setw(11)
        << (seen && h->second.silent_seconds >= 0
                ? format_duration(h->second.silent_seconds) + " ago"
                : "-")
        << std::setw(8)
        << (seen && h->second.completed >= 0
                ? std::to_string(static_cast<long long>(h->second.completed))
                : "-")
        << (s.last_exit.empty() ? "-" : s.last_exit) << "\n";
  }
  if (!health_note.empty()) out << "(heartbeat and work done: " << health_note << ")\n";
  return out.str();
}

std::map<std::string, WorkerHealth> learner_health(const ClusterState& state, std::string* note) {
  auto config = load_dice_config(state.config_path, {});
  if (!config.ok()) {
    *note = "cannot read the run's config: " + config.status().message();
    return {};
  }
  std::string host = "127.0.0.1";
  for (const auto& s : state.services) {
    if (s.role == "learner" && s.node != "localhost") host = s.node;
  }
  const int port = config->cluster.learner.metrics_port;
  if (port == 0) {
    *note = "cluster.learner.metrics_port is 0 (any free port), so the learner cannot be asked";
    return {};
  }
  auto health = query_worker_health(host, port, 1000);
  if (!health.ok()) {
    *note = health.status().message();
    return {};
  }
  return *health;
}

Status print_logs(const ClusterState& state, const std::string& run_log_name,
                  const std::string& run_log_path, const std::string& service, int lines,
                  std::ostream& out) {
  std::vector<std::string> paths;
  std::string names = run_log_name;
  if (service.empty() || service == run_log_name) paths.push_back(run_log_path);
  for (const auto& s : state.services) {
    names += ", " + s.name;
    if (service.empty() || service == s.name || service == s.role) paths.push_back(s.log_path);
  }
  if (paths.empty()) {
    return Status::not_found("no service '" + service + "' in run '" + state.run_id +
                             "'; services: " + names + " (or a role: learner, rollout, reward)");
  }
  for (const auto& path : paths) {
    out << "==> " << path << " <==\n";
    for (const auto& line : tail_lines(path, lines)) out << line << "\n";
  }
  return Status::ok_status();
}

}  // namespace dice::cluster
