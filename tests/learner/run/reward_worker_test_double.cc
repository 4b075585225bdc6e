// Test double of dice-reward for the learner tests: judges nothing; answers each EvalRequest with
// a Verdict whose reward is 1 (compiled, correct) for an even sample index and 0 (compiled,
// incorrect) for an odd one, with a source hash shared by all even samples of a task. A task
// whose reference holds "# constant reward" gets 0 for every sample (a group with no signal).
// Exits 0 on Shutdown.
#include <functional>
#include <sstream>

#include "net/wire/envelope.h"
#include "reward/pipeline.h"
#include "tests/learner/run/worker_test_double_main.h"

namespace {

dice::Status answer(dice::transport::WorkerConnection& connection,
                    dice::schema::Envelope::Body::Reader body) {
  if (body.which() != dice::schema::Envelope::Body::EVAL_REQUEST) {
    return dice::Status::invalid_argument("reward test double got a non-eval request");
  }
  auto request = body.getEvalRequest();
  auto candidate = request.getCandidate();
  const std::string reference = request.getTask().getReferenceSource().cStr();
  const bool even = candidate.getSampleIndex() % 2 == 0 &&
                    reference.find("# constant reward") == std::string::npos;
  capnp::MallocMessageBuilder message;
  auto verdict = connection.init_envelope(message).getBody().initVerdict();
  dice::set_verdict_identity(request, connection.worker_id(), verdict);
  verdict.setCompiled(true);
  verdict.setCorrect(even);
  verdict.setReward(even ? 1.0f : 0.0f);
  verdict.setFailure(even ? dice::schema::FailureClass::NONE
                          : dice::schema::FailureClass::INCORRECT);
  std::ostringstream hash;
  hash << std::hex << std::hash<std::string>()(request.getTask().getId().cStr()) << (even ? 0 : 1);
  auto build = verdict.initBuilds(1)[0];
  build.setSourceHash(hash.str());
  build.setCompiled(true);
  // A test double: the response stands in for the file a real worker extracts and runs.
  verdict.setEvaluatedSource(candidate.getText());
  DICE_RETURN_IF_ERROR(
      connection.send_result(dice::wire::encode(message), std::chrono::seconds(10)));
  return connection.finish(request.getWorkId());
}

}  // namespace

int main(int argc, char** argv) {
  return dice::test::run_worker_test_double(argc, argv, dice::schema::Role::REWARD, answer);
}
