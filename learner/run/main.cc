// dice-learner: the process that hosts a run. Workers (dice-rollout, dice-reward) connect to it;
// it walks the curriculum, sends rollout and evaluation requests, z-scores rewards within each
// task group, runs the TraceRL update after every step, pushes the new weights to rollout workers
// and writes everything to the reward log.
//
//   dice-learner --config configs/local.yaml [--metrics-port 9100] [--run-id ID] [overrides]
#include <iostream>

#include "learner/run/learner_service.h"

int main(int argc, char** argv) {
  return dice::service::run_service_main("learner", argc, argv, dice::run_learner_service,
                                         std::cout, std::cerr);
}
