// The local backend's supervisor: one daemon process per run that starts every service as a child,
// sends each child's output to its own log file, restarts a child that ends with a failure after
// an exponential backoff (giving it up after too many restarts in a window or in the run), and
// keeps the state file current. A child that exits 2 (bad input) is not restarted: the run
// drains, its stop reason naming the service. SIGTERM (or SIGINT/SIGHUP) starts the drain: SIGTERM
// to every child, SIGKILL to those still there after drain_timeout_ms, then the supervisor exits.
//
// Signals are blocked and taken with sigtimedwait in one loop, so there are no async handlers and
// all state lives in that loop.
#pragma once

#include <string>
#include <vector>

#include "cluster/cluster_state.h"
#include "cluster/service_plan.h"
#include "options/cluster_options.h"

namespace dice::cluster {

struct SupervisorSetup {
  std::string state_dir;
  LocalOptions local;
  std::vector<ServiceSpec> services;
  ClusterState state;  // run id, config, one entry per service (same order), log paths set
};

// Runs until drained; returns the process exit status (0 after a clean drain, 1 if the state file
// could not be written at start).
int run_supervisor(SupervisorSetup setup);

}  // namespace dice::cluster
