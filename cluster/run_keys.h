// The run's CURVE keys (cluster.transport.curve): one key pair per service, made at `up` into
// <state_dir>/keys/<run id>/ (0700, files 0600; net/transport/curve_keys.h), and the flag that
// tells each service where they are. A restarted service gets the same flag and so the same key;
// a new run gets new keys.
#pragma once

#include <string>
#include <vector>

#include "cluster/service_plan.h"
#include "common/status.h"

namespace dice::cluster {

// With CURVE on for the run's backend: makes the keys of `services` (the learner's named
// "learner", a worker's by its service name, "rollout-0") and appends "--transport-keys DIR" to
// each service's arguments; returns DIR. Off: changes nothing and returns "".
Result<std::string> add_transport_keys(const ClusterOptions& cluster, const std::string& state_dir,
                                       const std::string& run_id,
                                       std::vector<ServiceSpec>* services);

}  // namespace dice::cluster
