// The state file of a local dice-cluster run: <state_dir>/state.yaml, written by the supervisor
// after every change (to a temp file, then renamed over, so a reader sees the old or the new file,
// never half of one) and read by `dice-cluster up/status/logs/down`.
//
//   run_id: r1
//   config: /abs/configs/local.yaml
//   supervisor: {pid: 4242, start_ticks: 81723, state: running, started_at: 1764464521.5}
//     (plus stop_reason: "..." once the supervisor stopped the run by itself)
//   services:
//     - {name: rollout-0, role: rollout, node: localhost, worker_index: 0, log:
//     /abs/.../rollout-0.log,
//        pid: 4250, start_ticks: 81730, state: running, restarts: 1, started_at: 1764464523.1,
//        last_exit: "killed by signal 9"}
//
// Times are seconds since the epoch; start_ticks tells a live pid from a reused one.
//
// A slurm-backend run (cluster/slurm_backend.h) keeps the same file, written by dice-cluster
// itself on up/status/down with what Slurm last reported; the supervisor fields stay unset:
//
//   backend: slurm
//   slurm: {job_id: "812", job_state: RUNNING, nodes: gpu1}
//   services:
//     - {name: rollout-0, ..., pid: 0, step: "812.1", state: running, restarts: 0, ...}
//
// An ssh-backend run (cluster/ssh_backend.h) is a local run whose services are ssh clients: the
// supervisor fields are the local supervisor's, each pid is its ssh client's, and each service
// also records how to reach its remote process (the ssh argv up to the host, and the pid file the
// remote start script writes, remote_commands.h):
//
//   backend: ssh
//   services:
//     - {name: rollout-0, ..., pid: 4250, ssh: [/usr/bin/ssh, -T, ..., gpu2],
//        pid_file: /abs/state/remote/rollout-0.pid}
//
// A file without `backend` is a local run.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"

namespace dice::cluster {

// starting: not launched yet; running: process up; restarting: crashed, waiting out its backoff;
// exited: ended with status 0 (not restarted); failed: gave up after too many restarts (or could
// not be launched); stopped: ended by `down`.
enum class ServiceRunState { kStarting, kRunning, kRestarting, kExited, kFailed, kStopped };
const char* run_state_name(ServiceRunState state);
bool run_state_from_name(const std::string& name, ServiceRunState* state);

struct ServiceState {
  std::string name;  // "<role>-<worker_index>", unique in the run
  std::string role;
  std::string node;
  int worker_index = 0;
  std::string log_path;
  pid_t pid = 0;  // 0 while not running
  std::uint64_t start_ticks = 0;
  ServiceRunState state = ServiceRunState::kStarting;
  int restarts = 0;
  double started_at = 0;  // last (re)start
  std::string last_exit;  // "exit 1", "killed by signal 9"; empty if it never ended
  std::string step;       // slurm backend: the running step's id ("812.1"); empty otherwise
  // ssh backend: the ssh argv up to and including [user@]host, and the remote pid file; empty
  // for a service run on this machine.
  std::vector<std::string> ssh;
  std::string pid_file;
  pid_t remote_pid = 0;  // ssh backend: the pid on its node as `status` last saw it (not saved)
};

struct ClusterState {
  std::string backend = "local";  // "local", "ssh" or "slurm"
  std::string run_id;
  std::string config_path;
  pid_t supervisor_pid = 0;
  std::uint64_t supervisor_start_ticks = 0;
  std::string supervisor_state = "starting";  // starting, running, draining, stopped
  double supervisor_started_at = 0;
  int drain_timeout_ms = 0;  // cluster.local.drain_timeout_ms: tells `down` how long to wait
  // Why the supervisor stopped the run by itself (every service of a role gave up); empty when
  // it runs, or was stopped by `down`. Saved as supervisor.stop_reason.
  std::string stop_reason;
  std::vector<ServiceState> services;
  // slurm backend only: the job, its state as squeue last gave it (RUNNING, PENDING, CANCELLED...,
  // or "gone" once Slurm no longer knows it) and its nodes.
  std::string slurm_job_id;
  std::string slurm_job_state;
  std::string slurm_nodes;
};

std::string state_file_path(const std::string& state_dir);

// A run id for a run whose config names none: the UTC start time, "20261130-021500".
std::string run_id_from_clock();

// Writes `state` to <state_dir>/state.yaml atomically (temp file in the same folder + rename).
Status write_state_file(const std::string& state_dir, const ClusterState& state);

// Reads <state_dir>/state.yaml: not-found when absent, corruption naming the file and key when
// it does not parse.
Result<ClusterState> read_state_file(const std::string& state_dir);

}  // namespace dice::cluster
