// The slurm backend behind `dice-cluster up/status/logs/down`: submits the run as one Slurm job
// (cluster/slurm_script.h: one srun step per service, restarted with backoff), reads its state
// from Slurm's client commands (squeue for the job and its running steps; sacct, when accounting
// is on, once squeue has forgotten the job) and from the step files the script writes, and
// cancels it. State lives in the same state file as a local run's (cluster_state.h, backend:
// slurm), which dice-cluster rewrites with what it last saw at each command.
//
// Assumes the state dir, config, executables and working directory are on a filesystem shared by
// this machine and the nodes (executables are looked up here, like the local backend does).
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

#include "cluster/cluster_state.h"
#include "common/status.h"
#include "options/dice_config.h"

namespace dice::cluster {

// Writes <state_dir>/job.sbatch, submits it with sbatch, then waits up to
// cluster.local.start_timeout_ms until the job runs and every service's step has been launched.
// A job still pending then is left queued (its state says PENDING and why). Errors: not-found (no
// sbatch on PATH, a missing executable), unavailable (a run is already up in the state dir; sbatch
// rejected the script, with its message; the job ended before its services started, with the
// tail of its batch output), timeout (the job runs but some steps did not start; names them).
Result<ClusterState> slurm_up(const DiceConfig& config, const std::string& config_path,
                              const std::vector<std::string>& overrides);

// Refreshes the state of the run in `state_dir` from Slurm, saves it, and prints the table.
Status slurm_status(const std::string& state_dir, std::ostream& out);

// The tails of the step logs (`service`: a name, a role, "batch" for the batch script's output,
// or empty for all).
Status slurm_logs(const std::string& state_dir, const std::string& service, int lines,
                  std::ostream& out);

// scancel, then waits (cluster.slurm.down_timeout_s) until Slurm reports the job ended or no
// longer knows it; marks every service stopped. Errors: not-found (no state file / no scancel),
// timeout (the job still listed as active; names its state).
Status slurm_down(const std::string& state_dir, std::ostream& out);

// Unavailable when `state_dir` holds a slurm run whose job Slurm still lists as active (so that a
// local `up` there does not orphan it); ok otherwise.
Status check_no_active_slurm_job(const std::string& state_dir);

}  // namespace dice::cluster
