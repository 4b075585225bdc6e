// dice-learner's service body: everything between the parsed command line and the exit code.
//
//   prompts + tasks -> bind the WorkDispatcher (tcp://*:cluster.learner.port; 0 = any free port)
//   -> /metrics (--metrics-port, else cluster.learner.metrics_port) -> reward log + RunRecord
//   -> run_phases() -> Shutdown to every worker -> flush and close the reward log
//
// SIGTERM/SIGINT: no new steps, the step in flight drains (learner.drain_timeout_seconds), then
// the same ending. Exit codes: 0 done or drained; 1 a runtime failure (reward log, transport);
// 2 bad configuration or task files, or a run id the reward log already holds.
#pragma once

#include "net/service/service_flags.h"

namespace dice {

int run_learner_service(service::ServiceContext& context);

}  // namespace dice
