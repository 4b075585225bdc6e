#include "rollout/rollout_worker.h"

#include <capnp/message.h>

#include <chrono>

#include "common/log.h"
#include "model/tokenizer/chat_template.h"
#include "model/tokenizer/token_ends.h"
#include "net/wire/sampling_params.h"

namespace dice {

Result<std::vector<std::int64_t>> encode_rollout_prompt(const tokenizer::Tokenizer& tokenizer,
                                                        const std::string& prompt) {
  if (prompt.empty()) return Status::invalid_argument("the task has an empty prompt");
  return tokenizer::encode_user_turn(tokenizer, prompt);
}

Result<SamplerOptions> sampler_options_for(const RolloutOptions& rollout, const ModelConfig& model,
                                           const tokenizer::Tokenizer& tokenizer) {
  SamplerOptions o = sampler_options_from(rollout);
  if (static_cast<std::int64_t>(rollout.mask_token_id) != model.mask_token_id) {
    DICE_LOG(Info) << "rollout.mask_token_id differs from the model's; the model's is used"
                   << kv("rollout.mask_token_id", rollout.mask_token_id)
                   << kv("model", model.mask_token_id);
  }
  o.mask_token_id = model.mask_token_id;
  if (o.sampling.stop_token_ids.empty()) {
    for (const char* stop : {"<|im_end|>", "<|endoftext|>"}) {
      if (auto id = tokenizer.token_id(stop)) {
        o.sampling.stop_token_ids.push_back(static_cast<std::uint32_t>(*id));
      }
    }
    if (o.sampling.stop_token_ids.empty()) {
      return Status::invalid_argument(
          "the tokenizer has neither <|im_end|> nor <|endoftext|>: set "
          "rollout.sampling.stop_token_ids");
    }
  }
  return o;
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

namespace {

// The candidate's prompt ids and, for the response and its tail, token ids and unmask steps (and
// the response's log-probs).
void set_candidate_tokens(schema::Candidate::Builder candidate,
                          const std::vector<std::int64_t>& prompt, const GenerationResult& result) {
  auto prompt_ids = candidate.initPromptTokenIds(static_cast<unsigned>(prompt.size()));
  for (unsigned j = 0; j < prompt.size(); ++j)
    prompt_ids.set(j, static_cast<std::uint32_t>(prompt[j]));
  const auto n = static_cast<unsigned>(result.tokens.size());
  auto ids = candidate.initTokenIds(n);
  auto steps = candidate.initUnmaskStep(n);
  auto log_probs = candidate.initTokenLogProbs(n);
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
}

// The response as text (special tokens left out, invalid UTF-8 replaced) and where each of its
// tokens ends in it: the worker holds the tokenizer, so it is the one place that can say which
// text each unmask step wrote (tokenizer/token_ends.h).
void set_response_text(schema::Candidate::Builder candidate, const tokenizer::Tokenizer& tokenizer,
                       const GenerationResult& result) {
  std::vector<std::int32_t> text_ids(result.tokens.begin(), result.tokens.end());
  tokenizer::DecodeOptions decode;
  decode.skip_special_tokens = true;
  decode.replace_invalid_utf8 = true;
  const std::string text = tokenizer.decode(text_ids, decode);
  const std::vector<std::uint32_t> ends =
      tokenizer::token_text_ends(tokenizer, text_ids, decode, text);
  candidate.setText(text);
  auto out = candidate.initTokenTextEnds(static_cast<unsigned>(ends.size()));
  for (unsigned j = 0; j < ends.size(); ++j) out.set(j, ends[j]);
}

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

// Loads the engine could not finish (they failed on its thread, after this worker answered the
// push) go to the learner with the next message this worker sends or handles.
void report_load_failures(RolloutEngine& engine, service::ResultSink& sink) {
  for (const Status& failed : engine.take_load_failures()) report_error(sink, failed.to_string());
}

// A push the engine refused: logged here and answered with an Error, so the learner logs and
// counts it (dice_learner_transport_errors_received_total); the old weights stay as they were.
Status refuse_if_error(Status refused, RolloutEngine& engine, service::ResultSink& sink) {
  if (refused.ok()) return refused;
  const std::string text = refused.to_string() + "; staying on policy version " +
                           std::to_string(engine.policy_version());
  DICE_LOG(Error) << "weights update refused; keeping the old weights"
                  << kv("policy_version", engine.policy_version()) << kv("error", text);
  report_error(sink, text);
  return refused;
}

}  // namespace

Status RolloutWorker::handle(const wire::Decoded<schema::Envelope>& work,
                             service::ResultSink& sink) {
  report_load_failures(engine_, sink);
  auto body = work.root().getBody();
  if (body.which() != schema::Envelope::Body::ROLLOUT_REQUEST) {
    return Status::invalid_argument(std::string("a rollout worker takes rollout requests, got ") +
                                    wire::body_name(body.which()));
  }
  auto request = body.getRolloutRequest();
  auto task = request.getTask();
  DICE_ASSIGN_OR_RETURN(std::vector<std::int64_t> prompt,
                        encode_rollout_prompt(tokenizer_, task.getPrompt().cStr()));
  // The group is sampled as the request says (the learner's rollout.sampling, or an
  // evaluation's decoding); a request without sampling params gets the wire's defaults (DICE's).
  DICE_ASSIGN_OR_RETURN(SamplingOptions sampling,
                        wire::read_sampling_params(request.getSampling()));
  if (sampling.stop_token_ids.empty()) {
    sampling.stop_token_ids = engine_.configured_sampling().stop_token_ids;
  }
  std::vector<GenerationRequest> requests(request.getNumSamples());
  for (auto& r : requests) r.prompt = prompt;
  // Weights older than the request wants (a WeightsUpdate missed, e.g. across a restart): load
  // them first; the engine admits this group only after the update. Weights that cannot be
  // loaded fail the item: the request asks for no samples of older weights.
  const std::uint64_t wanted = request.getMinPolicyVersion();
  if (wanted > engine_.policy_version() && request.getWeightsDir().size() > 0) {
    DICE_RETURN_IF_ERROR(
        engine_.update_weights(request.getWeightsDir().cStr(), wanted, abort_on_weight_update_)
            .with_context("the request's policy version; staying on version " +
                          std::to_string(engine_.policy_version())));
  }
  // Cancelled by the learner before its group was handed to the engine (its group expired or was
  // skipped there): not sampled. A group the engine has taken is sampled to its end (the engine
  // has no abort of one group); the worker loop drops its candidates and acks the item alone.
  if (sink.cancellation() != nullptr && sink.cancellation()->cancelled()) {
    DICE_LOG(Info) << "rollout cancelled by the learner before sampling"
                   << kv("work", request.getWorkId()) << kv("task", task.getId().cStr());
    return Status::ok_status();
  }
  const auto start = std::chrono::steady_clock::now();
  DICE_ASSIGN_OR_RETURN(GroupResult group, engine_.generate(std::move(requests), sampling));
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
    candidate.setWeightsChecksum(group.weights_checksum);
    set_candidate_tokens(candidate, prompt, result);
    set_response_text(candidate, tokenizer_, result);
    candidate.setFinishReason(result.finish_reason);
    candidate.setGenerationSeconds(seconds);
    candidate.setRolloutWorker(worker_id_);
    const bool last = i + 1 == group.results.size();
    DICE_RETURN_IF_ERROR(last ? sink.send_last(message) : sink.send(message));
    if (samples_) samples_->add();
    if (tokens_) tokens_->add(static_cast<double>(result.tokens.size()));
  }
  DICE_LOG(Info) << "group generated" << kv("work", request.getWorkId())
                 << kv("task", task.getId().cStr()) << kv("samples", group.results.size())
                 << kv("seconds", seconds) << kv("policy_version", group.policy_version);
  return Status::ok_status();
}

Status apply_weights_update(schema::WeightsUpdate::Reader update, RolloutEngine& engine,
                            NcclWeightReceiver* receiver, bool abort_on_weight_update,
                            service::ResultSink& sink) {
  const bool abort = update.getAbortInFlight() || abort_on_weight_update;
  const std::uint64_t version = update.getPolicyVersion();
  report_load_failures(engine, sink);
  if (update.which() == schema::WeightsUpdate::CHECKPOINT_DIR) {
    return refuse_if_error(engine.update_weights(update.getCheckpointDir().cStr(), version, abort),
                           engine, sink);
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
  DICE_RETURN_IF_ERROR(
      refuse_if_error(engine.update_weights(fallback, version, abort), engine, sink));
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
