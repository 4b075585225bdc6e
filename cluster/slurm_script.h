// The sbatch script of a slurm-backend run: one job over the run's nodes, one srun step per
// service, each restarted with backoff when it fails (the local supervisor's policy:
// cluster.local.restart_backoff_ms, restart_backoff_max_ms, max_restarts, restart_window_s,
// max_restarts_per_run), except after exit status 2 (bad input), which stops the run.
//
// The job asks for one task per node (--ntasks-per-node=1) and every step runs with --overlap, so
// all of a node's services share what the job got: on a one-node test Slurm with 2 CPUs three
// services still start. For whole nodes and their GPUs add e.g. [--exclusive, --gres=gpu:8] to
// cluster.slurm.extra_args.
//
// What the script leaves in the state dir (which the nodes and dice-cluster must share):
//
//   <state_dir>/slurm-<job>.out     the batch script's own output
//   <state_dir>/logs/<name>.log     the service's output, appended across restarts, each start
//                                   preceded by a "=== dice-cluster: ... starting" line
//   <state_dir>/steps/<name>        its step state, rewritten (temp file + mv) at each change:
//       state running|restarting|exited|failed|stopped
//       restarts N
//       started_at SECONDS_SINCE_EPOCH
//       last_exit exit N            (empty until the first end)
//
// A cancelled job (scancel: SIGTERM to the script and every step) records "stopped" and does not
// restart anything. dice-dash (a service with `dashboard` set, cluster.dash) runs as a step like
// the others, but its giving up never stops the run, and once every other service's loop has
// ended the script stops it, so the job ends with the run.
#pragma once

#include <string>
#include <vector>

#include "cluster/service_plan.h"
#include "options/cluster_options.h"

namespace dice::cluster {

std::string slurm_batch_script(const ClusterOptions& options,
                               const std::vector<ServiceSpec>& services,
                               const std::string& work_dir, const std::string& state_dir,
                               const std::string& run_id);

}  // namespace dice::cluster
