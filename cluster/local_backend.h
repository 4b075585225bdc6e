// The local backend behind `dice-cluster up/status/logs/down`: starts the supervisor daemon for a
// run, reads its state file, tails its logs, and stops it leaving no process behind. The ssh
// backend is this backend with ssh clients as the supervisor's children (cluster/ssh_backend.h).
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

#include "cluster/cluster_state.h"
#include "cluster/status_table.h"
#include "common/status.h"
#include "options/dice_config.h"

namespace dice::cluster {

// cluster.local.state_dir, or <folder of run.reward_log_path>/cluster when that is empty.
std::string resolve_state_dir(const DiceConfig& config);

// Starts the supervisor (setsid, detached) for every service of `config` (cluster.backend local or
// ssh: then each child is the ssh client that runs the service on its node), then waits, up to
// cluster.local.start_timeout_ms, until each service has been launched. Returns the state then.
// Errors: not-found (missing executable, or no ssh client), unavailable (a run is already up in the
// state dir), timeout (naming the supervisor log), io-error.
Result<ClusterState> local_up(const DiceConfig& config, const std::string& config_path,
                              const std::vector<std::string>& overrides);

// SIGTERM to the supervisor, then waits until neither it nor any service it recorded is alive;
// after the drain timeout plus a grace period, SIGKILLs what is left (at once when the supervisor
// was already gone, leaving services behind). ssh runs: then checks every node and stops what is
// still there (stop_remote_services). Errors: not-found (no state file), timeout (a process would
// not die; names it), unavailable (a node cannot be reached over ssh).
Status local_down(const std::string& state_dir, std::ostream& out);

// The status table of the run in `state_dir` (format_status in status_table.h); for an ssh run
// with each service's pid on its node (one ssh per node).
Status local_status(const std::string& state_dir, std::ostream& out);

// Prints the last `lines` lines of each log: all services, or those whose name or role is
// `service` ("supervisor" for the supervisor's own log). Errors: not-found for an unknown service.
Status local_logs(const std::string& state_dir, const std::string& service, int lines,
                  std::ostream& out);

}  // namespace dice::cluster
