// Test double of dice-rollout for the learner tests: answers each RolloutRequest with numSamples
// Candidates whose text is a fenced code block naming the task and sample (no model runs), then
// finishes the item. Exits 0 on Shutdown.
#include <string>

#include "common/wire/envelope.h"
#include "tests/learner/worker_test_double_main.h"

namespace {

dice::Status answer(dice::transport::WorkerConnection& connection,
                    dice::schema::Envelope::Body::Reader body) {
  if (body.which() != dice::schema::Envelope::Body::ROLLOUT_REQUEST) {
    return dice::Status::invalid_argument("rollout test double got a non-rollout request");
  }
  auto request = body.getRolloutRequest();
  for (unsigned i = 0; i < request.getNumSamples(); ++i) {
    capnp::MallocMessageBuilder message;
    auto candidate = connection.init_envelope(message).getBody().initCandidate();
    candidate.setWorkId(request.getWorkId());
    candidate.setRunId(request.getRunId());
    candidate.setStep(request.getStep());
    candidate.setTaskId(request.getTask().getId());
    candidate.setGroup(request.getGroup());
    candidate.setSampleIndex(i);
    candidate.setPolicyVersion(request.getMinPolicyVersion());
    candidate.setText("```python\n# task " + std::string(request.getTask().getId().cStr()) +
                      " sample " + std::to_string(i) + "\nclass ModelNew: pass\n```\n");
    candidate.setRolloutWorker(connection.worker_id());
    DICE_RETURN_IF_ERROR(
        connection.send_result(dice::wire::encode(message), std::chrono::seconds(10)));
  }
  return connection.finish(request.getWorkId());
}

}  // namespace

int main(int argc, char** argv) {
  return dice::test::run_worker_test_double(argc, argv, dice::schema::Role::ROLLOUT, answer);
}
