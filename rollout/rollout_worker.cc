#include "rollout/rollout_worker.h"

#include <capnp/message.h>

#include <chrono>

#include "common/log.h"
#include "common/tokenizer/chat_template.h"

namespace dice {

Result<std::vector<std::int64_t>> encode_rollout_prompt(const tokenizer::Tokenizer& tokenizer,
                                                        const std::string& prompt) {
  if (prompt.empty()) return Status::invalid_argument("the task has an empty prompt");
  return tokenizer::encode_user_turn(tokenizer, prompt);
}

RolloutWorker::RolloutWorker(RolloutEngine& engine, const tokenizer::Tokenizer& tokenizer,
                             std::string worker_id, service::MetricsRegistry& registry,
                             bool abort_on_weight_update)
    : engine_(engine),
      tokenizer_(tokenizer),
      worker_id_(std::move(worker_id)),
      abort_on_weight_update_(abort_on_weight_update) {
  auto samples = registry.counter("dice_rollout_samples_total", "Candidates generated.");
  auto tokens = registry.counter("dice_rollout_tokens_total", "Response tokens generated.");
  auto seconds = registry.counter("dice_rollout_group_seconds_total",
                                  "Wall-clock seconds from request to the group's last sample.");
  if (samples.ok()) samples_ = samples.value();
  if (tokens.ok()) tokens_ = tokens.value();
  if (seconds.ok()) seconds_ = seconds.value();
}

Status RolloutWorker::handle(const wire::Decoded<schema::Envelope>& work,
                             service::ResultSink& sink) {
  auto body = work.root().getBody();
  if (body.which() != schema::Envelope::Body::ROLLOUT_REQUEST) {
    return Status::invalid_argument(std::string("a rollout worker takes rollout requests, got ") +
                                    wire::body_name(body.which()));
  }
  auto request = body.getRolloutRequest();
  auto task = request.getTask();
  DICE_ASSIGN_OR_RETURN(std::vector<std::int64_t> prompt,
                        encode_rollout_prompt(tokenizer_, task.getPrompt().cStr()));
  const auto sampling = request.getSampling();
  std::vector<GenerationRequest> requests(request.getNumSamples());
  for (auto& r : requests) {
    r.prompt = prompt;
    r.max_new_tokens = static_cast<int>(sampling.getMaxNewTokens());
    if (sampling.getStopTokenIds().size() > 0) {
      r.stop_token_ids.emplace();
      for (std::uint32_t id : sampling.getStopTokenIds()) r.stop_token_ids->push_back(id);
    }
  }
  // Weights older than the request wants (a WeightsUpdate missed, e.g. across a restart): load
  // them first; the engine admits this group only after the update.
  const std::uint64_t wanted = request.getMinPolicyVersion();
  if (wanted > engine_.policy_version() && request.getWeightsDir().size() > 0) {
    engine_.update_weights(request.getWeightsDir().cStr(), wanted, abort_on_weight_update_);
  }
  const auto start = std::chrono::steady_clock::now();
  DICE_ASSIGN_OR_RETURN(GroupResult group, engine_.generate(std::move(requests)));
  const float seconds =
      std::chrono::duration<float>(std::chrono::steady_clock::now() - start).count();
  if (seconds_) seconds_->add(seconds);

  for (std::size_t i = 0; i < group.results.size(); ++i) {
    const GenerationResult& result = group.results[i];
    capnp::MallocMessageBuilder message;
    auto candidate = sink.init_envelope(message).getBody().initCandidate();
    candidate.setWorkId(request.getWorkId());
    candidate.setRunId(request.getRunId());
    candidate.setStep(request.getStep());
    candidate.setTaskId(task.getId());
    candidate.setGroup(request.getGroup());
    candidate.setSampleIndex(static_cast<std::uint32_t>(i));
    candidate.setPolicyVersion(group.policy_version);
    auto prompt_ids = candidate.initPromptTokenIds(static_cast<unsigned>(prompt.size()));
    for (unsigned j = 0; j < prompt.size(); ++j)
      prompt_ids.set(j, static_cast<std::uint32_t>(prompt[j]));
    const auto n = static_cast<unsigned>(result.tokens.size());
    auto ids = candidate.initTokenIds(n);
    auto steps = candidate.initUnmaskStep(n);
    auto log_probs = candidate.initTokenLogProbs(n);
    std::vector<std::int32_t> text_ids(result.tokens.begin(), result.tokens.end());
    for (unsigned j = 0; j < n; ++j) {
      ids.set(j, static_cast<std::uint32_t>(result.tokens[j]));
      steps.set(j, static_cast<std::uint16_t>(result.unmask_steps[j]));
      log_probs.set(j, result.log_probs[j]);
    }
    const auto tail = static_cast<unsigned>(result.tail_tokens.size());
    auto tail_ids = candidate.initTailTokenIds(tail);
    auto tail_steps = candidate.initTailUnmaskStep(tail);
    for (unsigned j = 0; j < tail; ++j) {
      tail_ids.set(j, static_cast<std::uint32_t>(result.tail_tokens[j]));
      tail_steps.set(j, static_cast<std::uint16_t>(result.tail_unmask_steps[j]));
    }
    tokenizer::DecodeOptions decode;
    decode.skip_special_tokens = true;
    decode.replace_invalid_utf8 = true;
    candidate.setText(tokenizer_.decode(text_ids, decode));
    candidate.setFinishReason(result.finish_reason == FinishReason::kStopToken
                                  ? schema::Candidate::FinishReason::STOP_TOKEN
                                  : schema::Candidate::FinishReason::MAX_TOKENS);
    candidate.setGenerationSeconds(seconds);
    candidate.setRolloutWorker(worker_id_);
    const bool last = i + 1 == group.results.size();
    DICE_RETURN_IF_ERROR(last ? sink.send_last(message) : sink.send(message));
    if (samples_) samples_->add();
    if (tokens_) tokens_->add(static_cast<double>(n));
  }
  DICE_LOG(Info) << "group generated" << kv("work", request.getWorkId())
                 << kv("task", task.getId().cStr()) << kv("samples", group.results.size())
                 << kv("seconds", seconds) << kv("policy_version", group.policy_version);
  return Status::ok_status();
}

namespace {

// An Error envelope with work id 0 (about no work item) to the learner; best effort.
void report_error(service::ResultSink& sink, const std::string& text) {
  capnp::MallocMessageBuilder message;
  auto error = sink.init_envelope(message).getBody().initError();
  error.setWorkId(0);
  error.setMessage(text);
  Status sent = sink.send(message);
  if (!sent.ok()) {
    DICE_LOG(Warn) << "cannot report an error" << kv("error", sent.to_string());
  }
}

}  // namespace

Status apply_weights_update(schema::WeightsUpdate::Reader update, RolloutEngine& engine,
                            NcclWeightReceiver* receiver, bool abort_on_weight_update,
                            service::ResultSink& sink) {
  const bool abort = update.getAbortInFlight() || abort_on_weight_update;
  const std::uint64_t version = update.getPolicyVersion();
  if (update.which() == schema::WeightsUpdate::CHECKPOINT_DIR) {
    engine.update_weights(update.getCheckpointDir().cStr(), version, abort);
    return Status::ok_status();
  }
  if (version <= engine.policy_version()) return Status::ok_status();  // already held
  const std::string fallback = update.getNccl().getFallbackDir().cStr();
  Status failed = Status::unavailable("NCCL weights v" + std::to_string(version) +
                                      ": this worker does not take NCCL broadcasts "
                                      "(rollout.weight_sync checkpoint)");
  if (receiver != nullptr) {
    Result<NcclWeightReceiver::Outcome> got = receiver->receive(update, engine, abort);
    if (got.ok() && *got == NcclWeightReceiver::Outcome::kReceived) return Status::ok_status();
    failed = got.ok() ? Status::ok_status() : got.status();  // kNotListed: no error, fallback
  }
  if (!failed.ok()) {
    const bool mismatch = failed.code() == StatusCode::kInvalidArgument;
    DICE_LOG(Error) << (mismatch ? "NCCL weights do not fit this model; keeping the old weights"
                                 : "NCCL weights not received; loading the checkpoint folder")
                    << kv("policy_version", engine.policy_version())
                    << kv("error", failed.to_string());
    report_error(sink, failed.to_string() + (mismatch ? "; staying on policy version " +
                                                            std::to_string(engine.policy_version())
                                                      : "; using " + fallback));
    if (mismatch) return failed;
  }
  if (fallback.empty()) {
    return Status::invalid_argument("NCCL weights v" + std::to_string(version) +
                                    " without a fallbackDir; keeping the old weights");
  }
  engine.update_weights(fallback, version, abort);
  return failed;
}

void RolloutWorker::handle_control(const wire::Decoded<schema::Envelope>& message,
                                   service::ResultSink& sink) {
  auto body = message.root().getBody();
  if (body.which() != schema::Envelope::Body::WEIGHTS_UPDATE) return;
  apply_weights_update(body.getWeightsUpdate(), engine_, receiver_.get(), abort_on_weight_update_,
                       sink)
      .ignore();  // logged and reported inside
}

}  // namespace dice
