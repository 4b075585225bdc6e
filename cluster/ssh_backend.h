// The ssh backend behind `dice-cluster up/status/logs/down`: the local backend's supervisor
// (cluster/supervisor.h) runs on the machine where `dice-cluster up` runs, and each of its
// children is an ssh client that runs one service on its node through the remote start script
// (cluster/remote_commands.h). The remote service's exit status comes back as ssh's, so the
// supervisor's restart-with-backoff applies unchanged, and its output comes back through ssh into
// the local per-service log, so `logs` is the local backend's. What differs is stopping: killing
// an ssh client does not signal its remote process, so the supervisor drains by sending SIGTERM
// (then SIGKILL) to the recorded remote pids over a second ssh per host, and `down` checks every
// host afterwards, signalling whatever is left, until no service of the run remains.
//
// Assumes a shared filesystem: the config, the executables (looked up here, like the local and
// slurm backends do) and the working directory have the same paths on every node. Each remote pid
// file lives under <state dir>/remote/ at the same path on its node (shared or not).
#pragma once

#include <iosfwd>
#include <map>
#include <string>
#include <vector>

#include "cluster/cluster_state.h"
#include "cluster/service_plan.h"
#include "common/status.h"
#include "options/dice_config.h"

namespace dice::cluster {

// Turns the planned `services` of `config` into the ssh clients that run them on their nodes, and
// fills each of `states` (same order) with how to reach its remote process. `state_dir` holds the
// remote pid files. Errors: not-found when there is no ssh client on PATH.
Result<std::vector<ServiceSpec>> ssh_services(const DiceConfig& config,
                                              const std::vector<ServiceSpec>& services,
                                              const std::string& state_dir,
                                              const std::string& run_id,
                                              std::vector<ServiceState>* states);

// One ssh command per host that sends `signal` ("TERM", "KILL", or "0" to only look) to the live
// remote processes of the ssh services among `services`; empty when none runs over ssh.
std::vector<std::vector<std::string>> sweep_commands(const std::string& run_id,
                                                     const std::vector<ServiceState>& services,
                                                     const std::string& signal);

// Runs the sweep_commands (all hosts at once) and waits for them; returns the remote pid of every
// service that was live (before the signal), by service name. Errors: unavailable naming the host
// when ssh fails.
Result<std::map<std::string, pid_t>> sweep_remote(const std::string& run_id,
                                                  const std::vector<ServiceState>& services,
                                                  const std::string& signal);

// For `down`, once the local supervisor and ssh clients are gone: SIGTERM to every remote service
// of `state` still live, then waits up to `drain_timeout_ms` for them to end, then SIGKILL. Errors:
// unavailable (a host cannot be reached, so its services cannot be checked), timeout (a process
// survived SIGKILL; names it).
Status stop_remote_services(const ClusterState& state, int drain_timeout_ms, std::ostream& out);

}  // namespace dice::cluster
