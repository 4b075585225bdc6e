// Which service processes a run consists of, and the command line of each.
//
// One learner per run (on the node with role learner), one rollout worker per entry of a node's
// gpus.rollout and one reward worker per entry of gpus.reward. Worker indices count per role
// across nodes in config order, so worker-index N of role R is the N-th entry of gpus.R when the
// nodes' lists are concatenated: that is how a service finds its node and GPU from the config.
//
// Every service runs as
//   EXE --config CONFIG --run-id ID --worker-index N --metrics-port P [KEY=VALUE overrides]
// where P is cluster.learner.metrics_port for the learner and cluster.worker_metrics.
// <role>_base_port + N for worker N (0 = any free port). The overrides are dice-cluster up's.
#pragma once

#include <string>
#include <vector>

#include "common/status.h"
#include "options/cluster_options.h"

namespace dice::cluster {

struct ServiceSpec {
  std::string name;  // "<role>-<worker_index>"
  NodeRole role = NodeRole::kLearner;
  std::string node;  // host of the node that runs it
  int worker_index = 0;
  std::vector<int> gpus;  // CUDA ordinals: the learner's whole list, a worker's one entry
                          // (each backend starts the service with CUDA_VISIBLE_DEVICES set to
                          // them: visible_devices())
  int metrics_port = 0;   // its /metrics port (see metrics_port); 0 = any free port
  std::string executable;
  std::vector<std::string> args;  // without the executable itself
  bool dashboard = false;  // dice-dash (plan_dashboard): role "dash" in the state file; its end
                           // never stops the run
};

// The CUDA_VISIBLE_DEVICES value of a service: its gpus joined by commas ("0,1"); empty when the
// service has none (then the variable is left as the environment has it).
std::string visible_devices(const ServiceSpec& spec);

// What plan_services needs to know besides the cluster options.
struct PlanInputs {
  std::string config_path;             // absolute; handed to every service
  std::vector<std::string> overrides;  // handed on unchanged
  std::string run_id;
  std::string self_exe;  // dice-cluster's own path: executables are looked up next to it
  // false: the executable is named, not searched for here (for a plan that never runs here, e.g.
  // a script under test): executables[role] (or dice-<role>), under bin_dir when that is set and
  // it has no '/'. Every backend searches (ssh and slurm on the shared filesystem).
  bool resolve_locally = true;
};

// The services of every node (local backend: its single node). Errors: not-found naming the
// executable and every place searched.
Result<std::vector<ServiceSpec>> plan_services(const ClusterOptions& options,
                                               const PlanInputs& inputs);

// dice-dash over `reward_log_path` on the learner's node, as cluster.dash says ("dash-0"); NotFound
// naming the places searched when there is no dice-dash executable (bin_dir, next to
// dice-cluster, the build tree's tools/dice-dash/, PATH).
Result<ServiceSpec> plan_dashboard(const ClusterOptions& options,
                                   const std::string& reward_log_path, const std::string& self_exe);

// The address cluster.dash serves on, for people: http://HOST:PORT/ (0.0.0.0 shown as the
// learner's host).
std::string dashboard_url(const ClusterOptions& options);

// The /metrics port of worker `worker_index` of `role` (the learner's for kLearner); 0 = any.
int metrics_port(const ClusterOptions& options, NodeRole role, int worker_index);

// Where the executable for `role` is: executables[role] (or dice-<role>) used as is when it holds
// a '/', else searched in bin_dir, next to dice-cluster, in <dice-cluster's folder>/../<role>/
// (the build tree) and on PATH, in that order.
Result<std::string> find_executable(const LocalOptions& local, NodeRole role,
                                    const std::string& self_exe);

}  // namespace dice::cluster
