// What Slurm says about a dice job, through its client commands (squeue, sacct), and what the
// batch script says about each service (its step file, see slurm_script.h). The parsers are
// separate from the commands so they can be tested on captured output.
#pragma once

#include <string>
#include <vector>

#include "cluster/cluster_state.h"
#include "common/status.h"

namespace dice::cluster {

struct SlurmJobInfo {
  bool known = false;  // false once neither squeue nor sacct lists the job
  std::string state;   // RUNNING, PENDING, COMPLETING, CANCELLED, FAILED, ...
  std::string reason;  // squeue's %r: why it is pending, or None
  std::string nodes;   // squeue's %N
};

struct SlurmStep {
  std::string id;     // "812.1"
  std::string name;   // the service name (srun --job-name)
  std::string nodes;  // where it runs
};

// True for job states in which the job may still run or hold processes (PENDING, RUNNING,
// COMPLETING, SUSPENDED, ...); false for ended ones (COMPLETED, CANCELLED, FAILED, TIMEOUT, ...).
bool slurm_state_active(const std::string& state);

// The line for `job_id` of `squeue -h -o '%i|%T|%r|%N'` output; known = false without one.
SlurmJobInfo parse_squeue_job(const std::string& text, const std::string& job_id);

// `squeue -h -s -o '%i|%j|%N'` output, without the batch and extern steps.
std::vector<SlurmStep> parse_squeue_steps(const std::string& text);

// squeue (all states) for the job; when squeue no longer knows it, sacct if it is on PATH and
// accounting is on. Errors: not-found (no squeue on PATH), unavailable (squeue failed otherwise,
// e.g. slurmctld down: its message).
Result<SlurmJobInfo> query_slurm_job(const std::string& job_id);

// The job's running steps. Errors as query_slurm_job.
Result<std::vector<SlurmStep>> query_slurm_steps(const std::string& job_id);

// Reads a step file into `service` (state, restarts, started_at, last_exit). Not-found when it
// does not exist yet; corruption naming the file and line when it does not parse.
Status read_step_file(const std::string& path, ServiceState* service);

}  // namespace dice::cluster
