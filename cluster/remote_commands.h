// What the ssh and slurm backends would run: the ssh command line per node and the sbatch script
// of a run. Only built (and unit-tested) here; `dice-cluster up --dry-run` prints them. Neither
// has been run against a real cluster, and dice-cluster-node (the per-node agent the ssh command
// starts) does not exist yet.
//
// Both assume a shared filesystem: the config path, bin_dir and state dir mean the same on every
// host.
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

// An sbatch script running every service of `services` as its own srun step (one task on the
// service's node), all in the background, then waiting for them; each step's output goes to
// <state_dir>/logs/<name>.log.
std::string slurm_batch_script(const ClusterOptions& options,
                               const std::vector<ServiceSpec>& services,
                               const std::string& work_dir, const std::string& state_dir,
                               const std::string& run_id);

}  // namespace dice::cluster
