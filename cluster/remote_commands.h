// What the ssh backend runs on a node: the ssh client's arguments, and the two small POSIX sh
// scripts it hands the remote login shell. Shell quoting lives here too (shared with the slurm
// script, cluster/slurm_script.h).
//
// Each service runs as one ssh client on the machine running dice-cluster (a child of the local
// supervisor, cluster/supervisor.h), whose remote command is the start script:
//
//   ssh [extra_args] -T -o BatchMode=yes ... [user@]HOST
//       sh -c START dice-cluster-remote PID_FILE TAG DIR DEVICES EXE ARGS...
//
// START stops an earlier copy of the same service still recorded in PID_FILE (its ssh link died),
// cds into DIR, runs EXE ARGS in the background with CUDA_VISIBLE_DEVICES=DEVICES and
// DICE_CLUSTER_SERVICE=TAG in its environment, writes its pid to PID_FILE, waits for it and exits
// with its status (128 + N when killed by signal N: ssh itself would turn a remote signal into
// 255). Meanwhile a watcher reads the session's stdin, which the supervisor holds open: when the
// ssh link or the supervisor dies, stdin ends and the watcher SIGTERMs the service, so a lost link
// leaves no service running unattended.
//
// The sweep script signals recorded services on one host, since killing the local ssh client does
// not signal the remote process (no tty):
//
//   ssh ... HOST sh -c SWEEP dice-cluster-remote SIGNAL PID_FILE TAG [PID_FILE TAG ...]
//
// For each pair whose PID_FILE names a live process carrying DICE_CLUSTER_SERVICE=TAG (so a
// reused pid is never signalled), it sends SIGNAL (TERM, KILL, or 0 to only look) and prints
// "TAG PID". A pid file whose process is gone is removed (one naming a live process without the
// tag is left alone, like that process).
//
// Assumes a shared filesystem (config, executables and working directory have the same paths on
// every host) and a POSIX-like login shell (sh, bash, zsh) on the nodes.
#pragma once

#include <string>
#include <vector>

#include "cluster/service_plan.h"
#include "options/cluster_options.h"

namespace dice::cluster {

// `arg` quoted for a POSIX shell (single quotes; a ' inside becomes '\'').
std::string shell_quote(const std::string& arg);

// The ssh client's argv up to and including the target: ssh_exe, extra_args (first, so that an
// option given there wins over the defaults after it), -T, BatchMode, ConnectTimeout and
// ServerAliveInterval, then [user@]host.
std::vector<std::string> ssh_prefix(const SshOptions& ssh, const std::string& ssh_exe,
                                    const std::string& host);

// The value of DICE_CLUSTER_SERVICE for `service` of `run_id`: "<run_id>/<service>".
std::string service_tag(const std::string& run_id, const std::string& service);

// The remote command (one string, for the remote login shell) that runs `spec` through the start
// script; `work_dir` is where it runs (ssh.remote_dir or dice-cluster's working directory).
std::string remote_start_command(const ServiceSpec& spec, const std::string& pid_file,
                                 const std::string& tag, const std::string& work_dir);

// One recorded remote service, for remote_sweep_command.
struct RemoteTarget {
  std::string pid_file;
  std::string tag;
};

// The remote command that sends `signal` ("TERM", "KILL" or "0") to the live `targets` of one
// host and prints "TAG PID" for each of them.
std::string remote_sweep_command(const std::string& signal,
                                 const std::vector<RemoteTarget>& targets);

}  // namespace dice::cluster
