#include "reward/reward_worker.h"

#include <capnp/message.h>

#include <cstdlib>
#include <sstream>

#include "common/log.h"
#include "net/wire/enum_name.h"

namespace dice {
std::vector<std::string> gpu_slot_names(const std::vector<int>& gpus, int per_gpu) {
  std::vector<std::string> slots;
  for (int gpu : gpus) {
    for (int i = 0; i < per_gpu; ++i)
      slots.push_back(std::to_string(gpu) + "/" + std::to_string(i));
  }
  return slots;
}

Result<std::vector<int>> parse_visible_devices(const std::string& value) {
  std::vector<int> gpus;
  std::stringstream in(value);
  std::string entry;
  while (std::getline(in, entry, ',')) {
    char* end = nullptr;
    long n = std::strtol(entry.c_str(), &end, 10);
    if (entry.empty() || *end != '\0' || n < 0 || n > 1024) {
      return Status::invalid_argument("CUDA_VISIBLE_DEVICES='" + value + "': entry '" + entry +
                                      "' is not a GPU ordinal");
    }
    gpus.push_back(static_cast<int>(n));
  }
  return gpus;
}

Result<std::vector<int>> visible_gpus() {
  const char* visible = std::getenv("CUDA_VISIBLE_DEVICES");
  if (visible == nullptr) return std::vector<int>{0};
  DICE_ASSIGN_OR_RETURN(std::vector<int> gpus, parse_visible_devices(visible));
  if (gpus.empty()) {
    return Status::unavailable("CUDA_VISIBLE_DEVICES is empty: no GPU to evaluate on");
  }
  return gpus;
}

RewardWorker::RewardWorker(const RewardOptions& options, Toolchain toolchain,
                           PipelineIdentity identity, service::MetricsRegistry& registry)
    : pipeline_(options, std::move(toolchain), std::move(identity)),
      memo_(options.reuse_verdicts ? std::make_unique<VerdictMemo>() : nullptr),
      registry_(registry) {
  auto compile = registry_.counter("dice_reward_compile_seconds_total",
                                   "Wall-clock seconds spent compiling (cache misses).");
  auto eval = registry_.counter("dice_reward_eval_seconds_total",
                                "Wall-clock seconds of sandboxed evaluations.");
  if (compile.ok()) compile_seconds_ = compile.value();
  if (eval.ok()) eval_seconds_ = eval.value();
  auto reused = registry_.counter("dice_reward_verdicts_reused_total",
                                  "Verdicts copied from the same text's for the same task.");
  if (reused.ok()) reused_ = reused.value();
  auto retried = registry_.counter(
      "dice_reward_evaluations_retried_total",
      "Candidates evaluated a second time, on another GPU slot, after the reward service failed "
      "the first evaluation (internalError, sandboxUnavailable).");
  if (retried.ok()) retried_ = retried.value();
}

std::uint32_t reward_worker_capacity(const RewardOptions& options, std::size_t slots) {
  const auto base =
      static_cast<std::uint32_t>(slots) + static_cast<std::uint32_t>(options.compile_jobs);
  return options.reuse_verdicts ? 2 * base : base;
}

Status RewardWorker::handle(const wire::Decoded<schema::Envelope>& work,
                            service::ResultSink& sink) {
  auto body = work.root().getBody();
  if (body.which() != schema::Envelope::Body::EVAL_REQUEST) {
    return Status::invalid_argument(std::string("a reward worker takes eval requests, got ") +
                                    wire::body_name(body.which()));
  }
  auto request = body.getEvalRequest();
  capnp::MallocMessageBuilder message;
  auto out = sink.init_envelope(message).getBody();
  std::string key;  // with a memo: this request's, and `kept` its verdict if one was judged
  VerdictMemo::Stored kept;
  if (memo_) {
    key = VerdictMemo::key(request);
    kept = memo_->acquire(key);
  }
  schema::Verdict::Builder verdict = nullptr;
  if (kept) {
    verdict = copy_reused_verdict(kept, request, pipeline_.identity().worker_id, out);
    if (reused_) reused_->add();
  } else {
    verdict = out.initVerdict();
    Cancellation* cancellation = sink.cancellation();
    try {
      pipeline_.evaluate(request, verdict, cancellation);
    } catch (...) {
      if (memo_) memo_->abandon(key);  // else its repeats would wait for ever
      throw;
    }
    if (cancellation != nullptr && cancellation->cancelled()) {
      // Stopped or killed midway: no verdict of the candidate, to send or to reuse. A repeat of
      // the same text judges it afresh.
      if (memo_) memo_->abandon(key);
      DICE_LOG(Info) << "evaluation cancelled by the learner" << kv("work", request.getWorkId())
                     << kv("task", request.getTask().getId().cStr());
      return Status::ok_status();  // the worker loop ends the item with an Ack alone
    }
    if (memo_) memo_->finish(key, verdict.asReader());
    if (retried_ && verdict.getRetriedAfter().size() > 0) retried_->add();
  }

  const std::string failure = wire::enum_name(verdict.getFailure());
  auto verdicts = registry_.counter("dice_reward_verdicts_total",
                                    "Verdicts sent, by failure class (none = no failure).",
                                    {{"class", failure}});
  if (verdicts.ok()) verdicts.value()->add();
  if (compile_seconds_) compile_seconds_->add(verdict.getTimings().getCompileSeconds());
  if (eval_seconds_) eval_seconds_->add(verdict.getTimings().getEvalSeconds());
  DICE_LOG(Info) << "verdict" << kv("work", request.getWorkId())
                 << kv("task", request.getTask().getId().cStr()) << kv("failure", failure)
                 << kv("reward", verdict.getReward())
                 << kv("compile_s", verdict.getTimings().getCompileSeconds())
                 << kv("eval_s", verdict.getTimings().getEvalSeconds())
                 << kv("reused_from", verdict.getReusedFrom());
  return sink.send_last(message);  // one Verdict per request
}

}  // namespace dice
