// What `dice-cluster status` and `logs` print, for either backend: the status table of a run and
// the tails of its logs.
#pragma once

#include <iosfwd>
#include <string>

#include "cluster/cluster_state.h"
#include "cluster/learner_query.h"
#include "common/status.h"

namespace dice::cluster {

// The status table; `now` is seconds since the epoch. One row per service:
//
//   SERVICE  NODE  PID/STEP  STATE  RESTARTS  UPTIME  HEARTBEAT  DONE  LAST EXIT
//
// Local runs: PID/STEP is the pid, and a row recorded as running whose process is gone shows as
// "gone". ssh runs: the same, judged by the local ssh client, except that PID/STEP is the pid on
// the node (ServiceState::remote_pid, "-" when unknown). Slurm runs: the step id ("812.1"), as the
// caller last refreshed it from Slurm.
// HEARTBEAT (age of the learner's last message from the worker) and DONE (work items finished)
// come from `health`, the learner's view (learner_query.h); "-" where it has none, e.g. for the
// learner itself or when the learner did not answer (`health_note` then says why, under the
// table).
std::string format_status(const ClusterState& state, double now,
                          const std::map<std::string, WorkerHealth>& health = {},
                          const std::string& health_note = "");

// The learner's view of the workers of `state`'s run: reads the run's config for the learner's
// metrics port and queries the learner's node. On failure an empty map and `note` says why.
std::map<std::string, WorkerHealth> learner_health(const ClusterState& state, std::string* note);

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
