// What `dice-cluster status` and `logs` print, for either backend: the status table of a run and
// the tails of its logs.
#pragma once

#include <iosfwd>
#include <string>

#include "cluster/cluster_state.h"
#include "common/status.h"

namespace dice::cluster {

// The status table; `now` is seconds since the epoch. One row per service:
//
//   SERVICE  NODE  PID/STEP  STATE  RESTARTS  UPTIME  LAST EXIT
//
// Local runs: PID/STEP is the pid, and a row recorded as running whose process is gone shows as
// "gone". Slurm runs: the step id ("812.1"), as the caller last refreshed it from Slurm.
//
// Not here yet: each worker's last heartbeat and work done. The learner sees every worker's
// heartbeats and counts its work; those columns belong here, fed by a query to the learner's
// /metrics endpoint, once the learner exists (it does not yet).
std::string format_status(const ClusterState& state, double now);

// Prints the last `lines` lines of each log of `state`: every service's, or those whose name or
// role is `service`; `run_log_name` names the run's own log at `run_log_path` (the supervisor's,
// or the Slurm batch script's output), shown for an empty `service` or that name. Errors:
// not-found for an unknown service, listing the names there are.
Status print_logs(const ClusterState& state, const std::string& run_log_name,
                  const std::string& run_log_path, const std::string& service, int lines,
                  std::ostream& out);

// "42s", "3m5s", "2h10m", "1d4h".
std::string format_duration(double seconds);

}  // namespace dice::cluster
