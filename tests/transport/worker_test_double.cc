// Test double of a dice worker, built three times (see CMakeLists.txt) with a different default
// behaviour: echo_worker_test_double answers every work item at once, sleep_worker_test_double
// sleeps --sleep-ms before answering, crash_worker_test_double kills itself (SIGKILL) on its
// first work item. Answers: a Verdict for an EvalRequest (taskId and workId copied), numSamples
// Candidates for a RolloutRequest. Exits on Shutdown.
//
//   echo_worker_test_double --endpoint tcp://127.0.0.1:5555 --id w0 [--capacity 1]
//       [--sleep-ms 0] [--heartbeat-ms 1000] [--mode echo|sleep|crash]
#include <signal.h>

#include <chrono>
#include <cstdlib>
#include <iostream>
#include <string>
#include <thread>

#include "net/transport/worker_connection.h"
#include "tests/support/worker_test_double_flags.h"

#ifndef DICE_TEST_DOUBLE_MODE
#define DICE_TEST_DOUBLE_MODE "echo"
#endif

namespace {

using dice::transport::WorkerConnection;
using Body = dice::schema::Envelope::Body;

// Sends the answers to one work item, then finishes it.
dice::Status answer(WorkerConnection& connection, Body::Reader body) {
  using std::chrono::seconds;
  if (body.which() == Body::EVAL_REQUEST) {
    auto request = body.getEvalRequest();
    capnp::MallocMessageBuilder message;
    auto verdict = connection.init_envelope(message).getBody().initVerdict();
    verdict.setWorkId(request.getWorkId());
    verdict.setTaskId(request.getTask().getId());
    verdict.setRewardWorker(connection.worker_id());
    verdict.setReward(1.0f);
    DICE_RETURN_IF_ERROR(connection.send_result(dice::wire::encode(message), seconds(10)));
    return connection.finish(request.getWorkId());
  }
  auto request = body.getRolloutRequest();
  for (unsigned i = 0; i < request.getNumSamples(); ++i) {
    capnp::MallocMessageBuilder message;
    auto candidate = connection.init_envelope(message).getBody().initCandidate();
    candidate.setWorkId(request.getWorkId());
    candidate.setTaskId(request.getTask().getId());
    candidate.setSampleIndex(i);
    candidate.setText(request.getTask().getPrompt());
    candidate.setRolloutWorker(connection.worker_id());
    DICE_RETURN_IF_ERROR(connection.send_result(dice::wire::encode(message), seconds(10)));
  }
  return connection.finish(request.getWorkId());
}

}  // namespace

int main(int argc, char** argv) {
  dice::test::WorkerTestDoubleFlags flags;
  flags.mode = DICE_TEST_DOUBLE_MODE;
  flags.heartbeat_ms = 1000;
  if (!dice::test::parse_worker_flags(argc, argv, &flags)) return 2;
  dice::transport::WorkerOptions options;
  options.learner_endpoint = flags.endpoint;
  options.worker_id = flags.id;
  options.capacity = flags.capacity;
  options.heartbeat_interval_ms = flags.heartbeat_ms;
  auto connection = WorkerConnection::start(options);
  if (!connection.ok()) {
    std::cerr << connection.status().to_string() << "\n";
    return 1;
  }
  while (true) {
    auto received = (*connection)->receive(std::chrono::milliseconds(200));
    if (received.status().code() == dice::StatusCode::kTimeout) continue;
    if (!received.ok()) return 1;
    auto body = received->root().getBody();
    if (body.which() == Body::SHUTDOWN) return 0;
    if (body.which() != Body::EVAL_REQUEST && body.which() != Body::ROLLOUT_REQUEST) continue;
    if (flags.mode == "crash") raise(SIGKILL);  // dies holding the item, answering nothing
    if (flags.sleep_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(flags.sleep_ms));
    dice::Status status = answer(**connection, body);
    if (!status.ok()) {
      std::cerr << flags.id << ": " << status.to_string() << "\n";
      return 1;
    }
  }
}
