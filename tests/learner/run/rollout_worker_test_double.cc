// Test double of dice-rollout for the learner tests: answers each RolloutRequest with numSamples
// Candidates whose text is a fenced code block naming the task and sample (no model runs), with a
// made-up but well-formed trace (token ids below 63, the mask id of the tests' tiny model), then
// finishes the item. Its candidates claim the requested minPolicyVersion. Exits 0 on Shutdown.
#include <string>

#include "net/wire/envelope.h"
#include "tests/learner/run/worker_test_double_main.h"

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
    // Prompt of 5, response of 6 (blocks of 4: the response ends inside its last block, so a
    // tail of 1 completes it).
    const std::uint32_t prompt[] = {1, 2, 3, 4, 5};
    auto prompt_ids = candidate.initPromptTokenIds(5);
    for (unsigned j = 0; j < 5; ++j) prompt_ids.set(j, prompt[j]);
    auto ids = candidate.initTokenIds(6);
    auto steps = candidate.initUnmaskStep(6);
    auto log_probs = candidate.initTokenLogProbs(6);
    for (unsigned j = 0; j < 6; ++j) {
      ids.set(j, 10 + (i * 7 + j) % 50);
      steps.set(j, static_cast<std::uint16_t>((i + j) % 4));
      log_probs.set(j, -4.0f);
    }
    candidate.initTailTokenIds(1).set(0, 9);
    candidate.initTailUnmaskStep(1).set(0, 2);
    DICE_RETURN_IF_ERROR(
        connection.send_result(dice::wire::encode(message), std::chrono::seconds(10)));
  }
  return connection.finish(request.getWorkId());
}

}  // namespace

int main(int argc, char** argv) {
  return dice::test::run_worker_test_double(argc, argv, dice::schema::Role::ROLLOUT, answer);
}
