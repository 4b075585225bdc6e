// op_name_reward_test_double: a test double of dice-reward for the RL learning system test, with
// a reward a CPU computes truthfully. dice-cluster starts it in dice-reward's place
// (cluster.local.executables: {reward: <this file>}) with dice-reward's command line; it connects
// to the learner as a reward worker does (worker loop, CURVE keys, /metrics, drain on SIGTERM or
// Shutdown) and answers each EvalRequest with a Verdict whose reward is 1 when the kernel the
// response's first code block declares is named after the task's op, and 0 otherwise:
//   - the task's op is its id up to the last '-' ("relu-1" -> "relu");
//   - the kernel is the name after the block's first "__global__ void ", up to the next '(';
//     named after the op: "<op>_k" exactly ("relu_k"), so that naming every op somewhere in the
//     block, or a garbled declaration, earns nothing.
// It compiles and runs nothing, so it starts only with reward.mode extraction_only: the learner
// then never reads its reward 1 as a compiled, correct kernel, and every StepRecord says so.
// The verdict: compiled and correct false; failure none (the op's kernel), incorrect (another
// kernel or none) or noCodeBlock; the logExcerpt says what was checked; evaluatedSource is the
// block.
// With DICE_TEST_POISON_OP=<op> in its environment it plays a candidate that takes its reward
// worker down: asked to judge a task of that op, it SIGKILLs itself before answering
// (poison_candidate_system_test). DICE_TEST_REWARD_SLOTS=<n> judges n candidates at once, as
// dice-reward's GPU slots do (default 1), so a poison candidate takes the others down with it.
// With DICE_TEST_HANG_OP=<op> it plays a judging that outlasts its group: asked to judge a task of
// that op, it waits until the learner cancels the item, logs "cancelled by the learner" and
// answers nothing (the worker loop acks the item alone); uncancelled, it answers after
// kHangSeconds (expired_work_system_test).
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <iostream>
#include <string>
#include <thread>

#include "common/log.h"
#include "net/service/worker_loop.h"
#include "reward/extract.h"
#include "reward/pipeline.h"

namespace {

using dice::schema::FailureClass;

constexpr auto kHangSeconds = std::chrono::seconds(120);

// Waits until the item is cancelled (true) or kHangSeconds have passed (false).
bool wait_for_cancel(dice::service::ResultSink& sink) {
  const auto end = std::chrono::steady_clock::now() + kHangSeconds;
  while (std::chrono::steady_clock::now() < end) {
    if (sink.cancellation() != nullptr && sink.cancellation()->cancelled()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

std::string op_of_task(const std::string& task_id) {
  return task_id.substr(0, task_id.rfind('-'));
}

// The name after the first "__global__ void " in `code`, up to the next '(' ("" when none).
std::string first_kernel_name(const std::string& code) {
  static const std::string kDeclaration = "__global__ void ";
  const std::size_t start = code.find(kDeclaration);
  if (start == std::string::npos) return "";
  const std::size_t name = start + kDeclaration.size();
  const std::size_t open = code.find('(', name);
  return open == std::string::npos ? "" : code.substr(name, open - name);
}

dice::Status answer(const std::string& worker_id,
                    const dice::wire::Decoded<dice::schema::Envelope>& work,
                    dice::service::ResultSink& sink) {
  auto body = work.root().getBody();
  if (body.which() != dice::schema::Envelope::Body::EVAL_REQUEST) {
    return dice::Status::invalid_argument(
        std::string("op_name_reward_test_double takes eval requests, got ") +
        dice::wire::body_name(body.which()));
  }
  auto request = body.getEvalRequest();
  const std::string op = op_of_task(request.getTask().getId().cStr());
  const char* poison = std::getenv("DICE_TEST_POISON_OP");
  if (poison != nullptr && op == poison) {
    DICE_LOG(Warn) << "op_name_reward_test_double: a candidate of the poison op " << op
                   << " takes its worker down";
    ::raise(SIGKILL);
  }
  const char* hang = std::getenv("DICE_TEST_HANG_OP");
  if (hang != nullptr && op == hang && wait_for_cancel(sink)) {
    DICE_LOG(Info) << "op_name_reward_test_double: cancelled by the learner"
                   << dice::kv("work", request.getWorkId()) << dice::kv("task", op);
    return dice::Status::ok_status();
  }
  const dice::FencedBlock block = dice::first_code_block(request.getCandidate().getText().cStr());
  const std::string kernel = block.found ? first_kernel_name(block.body) : "";
  const bool named = !op.empty() && kernel == op + "_k";

  capnp::MallocMessageBuilder message;
  auto verdict = sink.init_envelope(message).getBody().initVerdict();
  dice::set_verdict_identity(request, worker_id, verdict);
  verdict.setCompiled(false);
  verdict.setCorrect(false);
  verdict.setReward(named ? 1.0f : 0.0f);
  verdict.setFailure(named         ? FailureClass::NONE
                     : block.found ? FailureClass::INCORRECT
                                   : FailureClass::NO_CODE_BLOCK);
  verdict.setLogExcerpt("op_name_reward_test_double: the first kernel is '" + kernel +
                        "', the task's op's is '" + op + "_k'; nothing compiled or run");
  verdict.setEvaluatedSource(block.body);
  return sink.send_last(message);
}

int run(dice::service::ServiceContext& context) {
  using namespace dice;
  if (context.config.reward.mode != RewardMode::kExtractionOnly) {
    std::cerr << "op_name_reward_test_double: reward.mode is "
              << config::enum_to_name(context.config.reward.mode)
              << "; this test double judges no kernel, so it runs only with reward.mode "
                 "extraction_only (the learner must not read its reward as a correct kernel)\n";
    return 2;
  }
  const char* slots = std::getenv("DICE_TEST_REWARD_SLOTS");
  const int capacity = slots != nullptr ? std::atoi(slots) : 1;
  auto loop_options = service::worker_loop_options(
      context, schema::Role::REWARD, static_cast<std::uint32_t>(std::max(1, capacity)));
  if (!loop_options.ok()) {
    std::cerr << "op_name_reward_test_double: " << loop_options.status().to_string() << "\n";
    return 2;
  }
  auto shutdown = service::ShutdownSignal::install();
  if (!shutdown.ok()) {
    std::cerr << "op_name_reward_test_double: " << shutdown.status().to_string() << "\n";
    return 1;
  }
  service::MetricsRegistry registry;
  const std::string worker_id = loop_options->transport.worker_id;
  DICE_LOG(Warn) << "op_name_reward_test_double: reward 1 means the code block names the task's "
                    "op, not a correct kernel";
  return service::run_worker_loop(
      *loop_options, registry, **shutdown,
      [&worker_id](const wire::Decoded<schema::Envelope>& work, service::ResultSink& sink) {
        return answer(worker_id, work, sink);
      },
      nullptr);
}

}  // namespace

int main(int argc, char** argv) {
  return dice::service::run_service_main("reward", argc, argv, run, std::cout, std::cerr);
}
