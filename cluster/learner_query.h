// What the learner knows about its workers, for `dice-cluster status`: each worker's heartbeat
// age and completed work, read from the learner's Prometheus /metrics endpoint (the series
// dice_learner_transport_worker_silent_seconds and dice_learner_transport_worker_completed_total
// that net/service/transport_metrics.h exports, labelled worker="<node>/<role>/<index>").
#pragma once

#include <map>
#include <string>

#include "common/status.h"

namespace dice::cluster {

struct WorkerHealth {
  double silent_seconds = -1;  // since the learner last heard from the worker; -1 = unknown
  double completed = -1;       // work items it finished; -1 = unknown
};

// Worker health by service name ("<role>-<index>", as in the cluster state), parsed from the text
// of a /metrics page. Lines that are not these series are skipped; a worker id that is not
// "<node>/<role>/<index>" is skipped too.
std::map<std::string, WorkerHealth> parse_worker_health(const std::string& metrics_text);

// GET http://host:port/metrics within `timeout_ms`, parsed. Unavailable (naming host:port) when
// the learner does not answer: it may not be up yet.
Result<std::map<std::string, WorkerHealth>> query_worker_health(const std::string& host, int port,
                                                                int timeout_ms);

}  // namespace dice::cluster
