// What the ssh backend would run: the ssh command line per node, and shell quoting (shared with
// the slurm script, cluster/slurm_script.h). Only built (and unit-tested) here; `dice-cluster up
// --dry-run` prints it. It has not been run against real hosts, and dice-cluster-node (the
// per-node agent the ssh command starts) does not exist yet.
//
// It assumes a shared filesystem: the config path and bin_dir mean the same on every host.
#pragma once

#include <string>
#include <vector>

#include "cluster/cluster_options.h"
#include "cluster/service_plan.h"

namespace dice::cluster {

// `arg` quoted for a POSIX shell (single quotes; a ' inside becomes '\'').
std::string shell_quote(const std::string& arg);

// The argv of the ssh command that starts node `node_index`'s services:
//   ssh [extra_args] [user@]HOST 'cd DIR && dice-cluster-node up --config CONFIG --run-id ID
//       --node-index I [overrides]'
// `remote_dir` is ssh.remote_dir or, when empty, the caller's working directory.
std::vector<std::string> ssh_command(const ClusterOptions& options, int node_index,
                                     const std::string& remote_dir, const PlanInputs& inputs);

}  // namespace dice::cluster
