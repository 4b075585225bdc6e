// The loop both learner-test worker doubles run: connect as `role`, answer each work item with
// `answer`, print each WeightsUpdate, exit 0 on a Shutdown message from the learner.
#pragma once

#include <chrono>
#include <functional>
#include <iostream>
#include <thread>

#include "net/transport/worker_connection.h"
#include "tests/support/worker_test_double_flags.h"

namespace dice::test {

using AnswerFn =
    std::function<Status(transport::WorkerConnection&, schema::Envelope::Body::Reader)>;

inline int run_worker_test_double(int argc, char** argv, schema::Role role,
                                  const AnswerFn& answer) {
  using Body = schema::Envelope::Body;
  WorkerTestDoubleFlags flags;
  if (!parse_worker_flags(argc, argv, &flags)) return 2;
  transport::WorkerOptions options;
  options.learner_endpoint = flags.endpoint;
  options.worker_id = flags.id;
  options.role = role;
  options.capacity = flags.capacity;
  options.heartbeat_interval_ms = flags.heartbeat_ms;
  auto connection = transport::WorkerConnection::start(options);
  if (!connection.ok()) {
    std::cerr << connection.status().to_string() << "\n";
    return 1;
  }
  while (true) {
    auto received = (*connection)->receive(std::chrono::milliseconds(200));
    if (received.status().code() == StatusCode::kTimeout) continue;
    if (!received.ok()) return 1;
    auto body = received->root().getBody();
    if (body.which() == Body::SHUTDOWN) return 0;
    if (body.which() == Body::WEIGHTS_UPDATE) {  // logged, so tests can see the push arrived
      auto update = body.getWeightsUpdate();
      std::cout << flags.id << ": weights update policy_version=" << update.getPolicyVersion()
                << " dir="
                << (update.isCheckpointDir() ? update.getCheckpointDir().cStr() : "(nccl)")
                << std::endl;
      continue;
    }
    if (body.which() != Body::EVAL_REQUEST && body.which() != Body::ROLLOUT_REQUEST) continue;
    if (flags.sleep_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(flags.sleep_ms));
    Status status = answer(**connection, body);
    if (!status.ok()) {
      std::cerr << flags.id << ": " << status.to_string() << "\n";
      return 1;
    }
  }
}

}  // namespace dice::test
