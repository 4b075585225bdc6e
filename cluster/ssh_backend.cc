#include "cluster/ssh_backend.h"

#include <filesystem>
#include <future>
#include <ostream>
#include <sstream>
#include <thread>

#include "cluster/command.h"
#include "cluster/process.h"
#include "cluster/remote_commands.h"
#include "common/config/load.h"

namespace dice::cluster {
namespace {

// Each check is an ssh round trip (a few hundred ms): poll gently.
constexpr int kPollMs = 200;
// How long `down` waits for SIGKILLed remote processes to disappear.
constexpr int kKillWaitMs = 5000;

// The services of one host: its ssh prefix and the remote targets on it, in state order.
struct HostGroup {
  std::vector<std::string> ssh;
  std::vector<RemoteTarget> targets;
};

std::vector<HostGroup> group_by_host(const std::string& run_id,
                                     const std::vector<ServiceState>& services) {
  std::vector<HostGroup> groups;
  for (const auto& s : services) {
    if (s.ssh.empty()) continue;
    HostGroup* group = nullptr;
    for (auto& g : groups) {
      if (g.ssh == s.ssh) group = &g;
    }
    if (group == nullptr) {
      groups.push_back({s.ssh, {}});
      group = &groups.back();
    }
    group->targets.push_back({s.pid_file, service_tag(run_id, s.name)});
  }
  return groups;
}

std::string names_of(const std::map<std::string, pid_t>& live) {
  std::string names;
  for (const auto& [name, pid] : live) {
    names += (names.empty() ? "" : ", ") + name + " (pid " + std::to_string(pid) + ")";
  }
  return names;
}

// Polls until no remote service is live or `deadline_ms` passes; returns what is still live.
Result<std::map<std::string, pid_t>> wait_gone(const ClusterState& state,
                                               std::int64_t deadline_ms) {
  while (true) {
    DICE_ASSIGN_OR_RETURN(auto live, sweep_remote(state.run_id, state.services, "0"));
    if (live.empty() || monotonic_ms() >= deadline_ms) return live;
    std::this_thread::sleep_for(std::chrono::milliseconds(kPollMs));
  }
}

}  // namespace

Result<std::vector<ServiceSpec>> ssh_services(const DiceConfig& config,
                                              const std::vector<ServiceSpec>& services,
                                              const std::string& state_dir,
                                              const std::string& run_id,
                                              std::vector<ServiceState>* states) {
  std::string ssh_exe = find_on_path("ssh");
  if (ssh_exe.empty()) {
    return Status::not_found(
        "cluster.backend ssh: no 'ssh' client on PATH (Debian: apt-get install openssh-client)");
  }
  const SshOptions& ssh = config.cluster.ssh;
  std::string work_dir = ssh.remote_dir.empty() ? config::working_directory() : ssh.remote_dir;
  std::string remote_dir = std::filesystem::absolute(state_dir).lexically_normal().string();
  std::vector<ServiceSpec> wrapped;
  for (std::size_t i = 0; i < services.size(); ++i) {
    const ServiceSpec& spec = services[i];
    ServiceState& state = (*states)[i];
    state.ssh = ssh_prefix(ssh, ssh_exe, spec.node);
    state.pid_file = remote_dir + "/remote/" + spec.name + ".pid";
    ServiceSpec client = spec;
    client.executable = ssh_exe;
    client.args = std::vector<std::string>(state.ssh.begin() + 1, state.ssh.end());
    client.args.push_back(
        remote_start_command(spec, state.pid_file, service_tag(run_id, spec.name), work_dir));
    // The devices are set on the node by the start script, not in the ssh client's environment.
    client.gpus.clear();
    wrapped.push_back(std::move(client));
  }
  return wrapped;
}

std::vector<std::vector<std::string>> sweep_commands(const std::string& run_id,
                                                     const std::vector<ServiceState>& services,
                                                     const std::string& signal) {
  std::vector<std::vector<std::string>> commands;
  for (const auto& group : group_by_host(run_id, services)) {
    std::vector<std::string> argv = group.ssh;
    argv.push_back(remote_sweep_command(signal, group.targets));
    commands.push_back(std::move(argv));
  }
  return commands;
}

Result<std::map<std::string, pid_t>> sweep_remote(const std::string& run_id,
                                                  const std::vector<ServiceState>& services,
                                                  const std::string& signal) {
  // One ssh per host, all at once: each costs a login (a few hundred ms).
  std::vector<std::vector<std::string>> commands = sweep_commands(run_id, services, signal);
  std::vector<std::future<Result<CommandResult>>> results;
  for (const auto& argv : commands) {
    results.push_back(std::async(std::launch::async, [&argv] { return run_command(argv); }));
  }
  std::map<std::string, pid_t> live;
  for (std::size_t i = 0; i < commands.size(); ++i) {
    DICE_ASSIGN_OR_RETURN(CommandResult result, results[i].get());
    const std::string& host = commands[i][commands[i].size() - 2];
    if (result.exit_code != 0) {
      return Status::unavailable("cannot reach " + host + " over ssh to check run '" + run_id +
                                 "' there (ssh exit " + std::to_string(result.exit_code) +
                                 "): " + result.err + " (see cluster.ssh in the run's config)");
    }
    // Lines "TAG PID"; the tag is "<run_id>/<service>" and may hold spaces, the pid does not.
    std::istringstream lines(result.out);
    for (std::string line; std::getline(lines, line);) {
      std::size_t space = line.rfind(' ');
      std::string prefix = run_id + "/";
      if (space == std::string::npos || line.compare(0, prefix.size(), prefix) != 0) continue;
      std::string name = line.substr(prefix.size(), space - prefix.size());
      live[name] = static_cast<pid_t>(std::atol(line.c_str() + space + 1));
    }
  }
  return live;
}

Status stop_remote_services(const ClusterState& state, int drain_timeout_ms, std::ostream& out) {
  DICE_ASSIGN_OR_RETURN(auto live, sweep_remote(state.run_id, state.services, "TERM"));
  if (live.empty()) return Status::ok_status();
  // Left behind by a supervisor that was killed, or by a lost ssh link: drain them here.
  out << "down: sent SIGTERM to services still running on their nodes: " << names_of(live) << "\n";
  DICE_ASSIGN_OR_RETURN(live, wait_gone(state, monotonic_ms() + drain_timeout_ms));
  if (live.empty()) return Status::ok_status();
  out << "down: still running after " << drain_timeout_ms << " ms: " << names_of(live)
      << "; SIGKILL\n";
  DICE_RETURN_IF_ERROR(sweep_remote(state.run_id, state.services, "KILL").status());
  DICE_ASSIGN_OR_RETURN(live, wait_gone(state, monotonic_ms() + kKillWaitMs));
  if (live.empty()) return Status::ok_status();
  return Status::timeout("remote processes of run '" + state.run_id +
                         "' survived SIGKILL: " + names_of(live));
}

}  // namespace dice::cluster
