#include "learner/step/step_tracker.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <unordered_set>

#include "common/log.h"
#include "net/wire/enum_name.h"
#include "net/wire/envelope.h"
#include "net/wire/reward_policy_spec.h"

namespace dice {

using Body = schema::Envelope::Body;

namespace {

// What the policy update needs of a candidate; trace_layout() checks it when the update runs.
TraceSample trace_of(schema::Candidate::Reader candidate) {
  TraceSample t;
  for (std::uint32_t id : candidate.getPromptTokenIds()) t.prompt.push_back(id);
  for (std::uint32_t id : candidate.getTokenIds()) t.response.push_back(id);
  for (std::uint16_t k : candidate.getUnmaskStep()) t.unmask_steps.push_back(k);
  for (float lp : candidate.getTokenLogProbs()) t.old_log_probs.push_back(lp);
  for (std::uint32_t id : candidate.getTailTokenIds()) t.tail.push_back(id);
  for (std::uint16_t k : candidate.getTailUnmaskStep()) t.tail_unmask_steps.push_back(k);
  t.policy_version = candidate.getPolicyVersion();
  return t;
}

// Whether `verdict` is a judgement of the candidate the learner sent for `task_id`: the same task,
// and a reward the reward policies can give (both are binary; in reward mode full, 1 only for a
// compiled, correct kernel: `reward_means_correct`). NaN is left to the caller, which says so in
// its own words.
Status check_verdict_answers(schema::Verdict::Reader verdict, const std::string& task_id,
                             bool reward_means_correct) {
  if (verdict.getTaskId() != task_id) {
    return Status::invalid_argument(std::string("it names task '") + verdict.getTaskId().cStr() +
                                    "'");
  }
  const double reward = verdict.getReward();
  if (std::isfinite(reward) && reward != 0.0 && reward != 1.0) {
    return Status::invalid_argument("reward " + std::to_string(reward) + " is neither 0 nor 1");
  }
  if (reward_means_correct && reward == 1.0 && !(verdict.getCompiled() && verdict.getCorrect())) {
    return Status::invalid_argument("reward 1 for a kernel not both compiled and correct");
  }
  return Status::ok_status();
}

}  // namespace

bool is_service_fault(schema::Verdict::Reader verdict) {
  const schema::FailureClass f = verdict.getFailure();
  return f == schema::FailureClass::INTERNAL_ERROR ||
         f == schema::FailureClass::SANDBOX_UNAVAILABLE;
}

double scored_reward(schema::Verdict::Reader verdict) {
  return is_service_fault(verdict) ? 0.0 : verdict.getReward();
}

double internal_error_share(const StepCounts& c) {
  const std::uint32_t judged = c.verdicts + c.unscored_internal_errors;
  return judged == 0 ? std::numeric_limits<double>::quiet_NaN()
                     : static_cast<double>(c.internal_errors) / judged;
}

StepTracker::StepTracker(StepSettings settings, std::uint64_t* next_work_id,
                         std::uint64_t* next_group_id)
    : settings_(std::move(settings)), next_work_id_(next_work_id), next_group_id_(next_group_id) {
  counts_.exploration.group_size = settings_.samples_per_task;
}

void StepTracker::start(const std::vector<const LearnerTask*>& tasks, transport::TimePoint now) {
  for (const LearnerTask* task : tasks) {
    const std::uint64_t group_id = (*next_group_id_)++;
    const std::uint64_t work_id = (*next_work_id_)++;
    Group& group = groups_[group_id];
    group.task = task;
    group.rollout_work_id = work_id;
    group.started = now;
    rollouts_[work_id] = group_id;
    ++open_groups_;
    ++counts_.tasks;

    capnp::MallocMessageBuilder message;
    auto request = wire::init_envelope(message, settings_.learner_id, settings_.run_id)
                       .getBody()
                       .initRolloutRequest();
    request.setWorkId(work_id);
    request.setRunId(settings_.run_id);
    request.setStep(settings_.step);
    request.setGroup(group_id);
    fill_task(*task, request.initTask());
    request.setNumSamples(settings_.samples_per_task);
    if (settings_.fill_sampling) settings_.fill_sampling(request.initSampling());
    request.setMinPolicyVersion(settings_.policy_version);
    request.setWeightsDir(settings_.weights_dir);
    outbox_.push_back(transport::WorkItem{work_id, wire::encode(message), schema::Role::ROLLOUT});
  }
}

void StepTracker::handle(transport::WorkResult result) {
  auto body = result.envelope.root().getBody();
  switch (body.which()) {
    case Body::CANDIDATE:
      on_candidate(result.work_id, body.getCandidate());
      break;
    case Body::VERDICT:
      on_verdict(result.work_id, std::move(result.envelope));
      break;
    case Body::ERROR:
      on_error(result.work_id, body.getError());
      break;
    default:
      ++counts_.unexpected_results;
      DICE_LOG(Warn) << "unexpected result" << kv("work", result.work_id)
                     << kv("body", wire::body_name(body.which())) << kv("worker", result.worker_id);
  }
}

void StepTracker::on_candidate(std::uint64_t work_id, schema::Candidate::Reader candidate) {
  auto rollout = rollouts_.find(work_id);
  if (rollout == rollouts_.end()) {
    ++counts_.unexpected_results;
    DICE_LOG(Warn) << "candidate for unknown rollout work" << kv("work", work_id)
                   << kv("step", settings_.step);
    return;
  }
  const std::uint64_t group_id = rollout->second;
  Group& group = groups_[group_id];
  if (group.finished) return;  // skipped already; its late candidates are not judged
  // An answer to another question (a buggy or hostile worker) is not this task's sample.
  if (candidate.getTaskId() != group.task->id) {
    ++counts_.unexpected_results;
    DICE_LOG(Warn) << "candidate dropped: it names another task" << kv("task", group.task->id)
                   << kv("named", candidate.getTaskId().cStr()) << kv("work", work_id);
    return;
  }
  const std::uint32_t index = candidate.getSampleIndex();
  if (index >= settings_.samples_per_task || group.samples.count(index)) {
    ++counts_.duplicate_candidates;
    DICE_LOG(Warn) << "candidate dropped: sample index out of range or repeated"
                   << kv("task", group.task->id) << kv("sample", index) << kv("work", work_id);
    return;
  }
  Sample& sample = group.samples[index];
  // Weights older than the staleness bound: the sample no longer says anything about the policy
  // being trained.
  const std::uint64_t version = candidate.getPolicyVersion();
  if (version + settings_.max_staleness < settings_.policy_version) {
    sample.lost = true;
    ++counts_.stale_dropped;
    check_complete(group_id);
    return;
  }
  ++counts_.candidates;
  ++candidate_versions_[version];
  sample.response_text = candidate.getText().cStr();
  for (const std::uint32_t end : candidate.getTokenTextEnds())
    sample.token_text_ends.push_back(end);
  sample.weights_checksum = candidate.getWeightsChecksum();
  sample.rollout_worker = candidate.getRolloutWorker().cStr();
  counts_.truncated += candidate.getFinishReason() == schema::Candidate::FinishReason::MAX_TOKENS;
  counts_.generation_seconds += candidate.getGenerationSeconds();
  sample.trace = trace_of(candidate);
  sample.trace.temperature = settings_.temperature;
  const std::uint64_t eval_id = (*next_work_id_)++;
  sample.eval_work_id = eval_id;
  evals_[eval_id] = EvalRef{group_id, index};

  capnp::MallocMessageBuilder message;
  auto request = wire::init_envelope(message, settings_.learner_id, settings_.run_id)
                     .getBody()
                     .initEvalRequest();
  request.setWorkId(eval_id);
  auto task = request.initTask();
  fill_task(*group.task, task);
  task.setWantTiming(settings_.want_timing);
  if (settings_.reward_policy) {
    wire::fill_reward_policy(*settings_.reward_policy, task.initRewardPolicy());
  }
  // The reward worker judges the text; the token lists (kept for the policy update) stay here, so
  // an evaluation request is a few KB rather than the whole trace. Identity fields come from the
  // learner's own books, not the worker's, because the reward log's keys are built from them.
  auto out = request.initCandidate();
  out.setWorkId(work_id);
  out.setRunId(settings_.run_id);
  out.setStep(settings_.step);
  out.setTaskId(group.task->id);
  out.setGroup(group_id);
  out.setSampleIndex(index);
  out.setPolicyVersion(version);
  out.setText(candidate.getText());
  outbox_.push_back(transport::WorkItem{eval_id, wire::encode(message), schema::Role::REWARD});
}

void StepTracker::on_verdict(std::uint64_t work_id, wire::Decoded<schema::Envelope> envelope) {
  auto ref = evals_.find(work_id);
  if (ref == evals_.end()) {
    ++counts_.unexpected_results;
    DICE_LOG(Warn) << "verdict for unknown evaluation work" << kv("work", work_id)
                   << kv("step", settings_.step);
    return;
  }
  const EvalRef where = ref->second;
  evals_.erase(ref);
  Group& group = groups_[where.group];
  Sample& sample = group.samples[where.sample];
  if (group.finished || sample.verdict || sample.lost) return;
  auto verdict = envelope.root().getBody().getVerdict();
  if (Status answers =
          check_verdict_answers(verdict, group.task->id, settings_.reward_mode == "full");
      !answers.ok()) {
    // Not a judgement of what was asked: a failed evaluation, not a reward.
    ++counts_.eval_errors;
    DICE_LOG(Warn) << "verdict refused: sample not used" << kv("task", group.task->id)
                   << kv("sample", where.sample) << kv("why", answers.message())
                   << kv("worker", verdict.getRewardWorker().cStr());
    sample.lost = true;
    check_complete(where.group);
    return;
  }
  if (!std::isfinite(verdict.getReward())) {
    // A NaN reward would turn every advantage of the group into NaN: treat it as a failed
    // evaluation instead.
    ++counts_.eval_errors;
    DICE_LOG(Warn) << "verdict with a non-finite reward: sample not used"
                   << kv("task", group.task->id) << kv("sample", where.sample)
                   << kv("worker", verdict.getRewardWorker().cStr());
    sample.lost = true;
    check_complete(where.group);
    return;
  }
  if (is_service_fault(verdict)) {
    // The worker has already tried a second slot. Left unscored, a fault would be a pass a
    // candidate that provokes one takes at will; scored, it is a 0 for an answer nobody judged.
    // learner.internal_errors chooses; the share is on every step line either way.
    ++counts_.internal_errors;
    const bool unscored = settings_.internal_errors == InternalErrorScoring::kUnscored;
    DICE_LOG(Warn) << (unscored ? "verdict with a reward-service fault: sample not scored"
                                : "verdict with a reward-service fault: scored as a failure")
                   << kv("task", group.task->id) << kv("sample", where.sample)
                   << kv("failure", wire::enum_name(verdict.getFailure()))
                   << kv("worker", verdict.getRewardWorker().cStr())
                   << kv("retried_after", verdict.getRetriedAfter().cStr())
                   << kv("excerpt", verdict.getLogExcerpt().cStr());
    if (unscored) {
      ++counts_.eval_errors;
      ++counts_.unscored_internal_errors;
      sample.verdict.emplace(std::move(envelope));
      sample.scored = false;
      check_complete(where.group);
      return;
    }
  }
  ++counts_.verdicts;
  counts_.compiled += verdict.getCompiled() ? 1 : 0;
  counts_.correct += verdict.getCorrect() && !is_service_fault(verdict) ? 1 : 0;
  counts_.reward_sum += scored_reward(verdict);
  sample.verdict.emplace(std::move(envelope));
  check_complete(where.group);
}

void StepTracker::on_error(std::uint64_t work_id, schema::Error::Reader error) {
  if (auto rollout = rollouts_.find(work_id); rollout != rollouts_.end()) {
    ++counts_.rollout_errors;
    Group& group = groups_[rollout->second];
    DICE_LOG(Warn) << "rollout failed" << kv("task", group.task->id) << kv("work", work_id)
                   << kv("error", error.getMessage().cStr());
    // No more candidates come for this group; the ones already in are still judged.
    group.rollout_failed = true;
    check_complete(rollout->second);
    return;
  }
  if (auto ref = evals_.find(work_id); ref != evals_.end()) {
    ++counts_.eval_errors;
    const EvalRef where = ref->second;
    evals_.erase(ref);
    Group& group = groups_[where.group];
    DICE_LOG(Warn) << "evaluation failed" << kv("task", group.task->id)
                   << kv("sample", where.sample) << kv("work", work_id)
                   << kv("error", error.getMessage().cStr());
    group.samples[where.sample].lost = true;
    check_complete(where.group);
    return;
  }
  ++counts_.unexpected_results;
  DICE_LOG(Warn) << "error for unknown work" << kv("work", work_id)
                 << kv("error", error.getMessage().cStr());
}

void StepTracker::check_complete(std::uint64_t group_id) {
  Group& group = groups_[group_id];
  if (group.finished) return;
  std::uint32_t settled = 0;  // samples judged or lost
  for (const auto& entry : group.samples) settled += entry.second.verdict || entry.second.lost;
  if (settled < group.samples.size()) return;  // evaluations still out
  if (group.rollout_failed) {
    finish(group_id, false, "rollout failed");
  } else if (group.samples.size() == settings_.samples_per_task) {
    finish(group_id, true, "");
  }
}

void StepTracker::finish(std::uint64_t group_id, bool complete, const std::string& skip_reason) {
  Group& group = groups_[group_id];
  group.finished = true;
  --open_groups_;
  FinishedGroup out;
  out.group = group_id;
  out.task = group.task;
  out.complete = complete;
  out.skip_reason = skip_reason;
  std::vector<double> rewards;
  if (!complete && group.rollout_work_id != 0) unwanted_.push_back(group.rollout_work_id);
  for (auto& [index, sample] : group.samples) {
    if (!sample.verdict) {
      if (!complete && sample.eval_work_id != 0 && !sample.lost) {
        unwanted_.push_back(sample.eval_work_id);
      }
      continue;
    }
    if (sample.scored)
      rewards.push_back(scored_reward(sample.verdict->root().getBody().getVerdict()));
    out.samples.push_back(FinishedSample{index, std::move(sample.response_text),
                                         std::move(*sample.verdict), 0.0, std::move(sample.trace),
                                         sample.weights_checksum, std::move(sample.rollout_worker),
                                         sample.scored, std::move(sample.token_text_ends)});
    sample.verdict.reset();
    if (sample.eval_work_id) evals_.erase(sample.eval_work_id);
  }
  rollouts_.erase(group.rollout_work_id);
  if (complete) {
    ++counts_.groups_complete;
    GroupAdvantages adv = group_advantages(rewards, settings_.drop_constant_groups);
    out.dropped = adv.dropped;
    counts_.groups_dropped += adv.dropped ? 1 : 0;
    std::vector<JudgedAnswer> answers;
    std::size_t scored = 0;  // rewards[] holds the scored samples only, in order
    for (FinishedSample& sample : out.samples) {
      if (!sample.scored) continue;
      answers.push_back(JudgedAnswer{sample.response_text, rewards[scored]});
      sample.advantage = adv.advantages[scored++];
      sample.trace.advantage = sample.advantage;
    }
    // A group of lost samples only was not judged: it says nothing about exploration.
    if (!answers.empty()) {
      const GroupVariety variety = group_variety(answers);
      counts_.exploration.add_group(variety.samples, variety.distinct_texts, variety.mixed,
                                    adv.dropped);
    }
  } else {
    ++counts_.groups_skipped;
    DICE_LOG(Warn) << "group skipped" << kv("task", group.task->id) << kv("group", group_id)
                   << kv("step", settings_.step) << kv("why", skip_reason)
                   << kv("judged", out.samples.size());
  }
  finished_.push_back(std::move(out));
}

void StepTracker::expire(transport::TimePoint now, std::chrono::milliseconds timeout) {
  for (auto& [id, group] : groups_) {
    if (!group.finished && now - group.started > timeout) {
      finish(id, false, "timed out after " + std::to_string(timeout.count() / 1000) + " s");
    }
  }
}

void StepTracker::abandon_all(const std::string& why) {
  for (auto& [id, group] : groups_) {
    if (!group.finished) finish(id, false, why);
  }
}

std::vector<transport::WorkItem> StepTracker::take_outbox() {
  std::vector<transport::WorkItem> out;
  out.swap(outbox_);
  return out;
}

std::vector<FinishedGroup> StepTracker::take_finished() {
  std::vector<FinishedGroup> out;
  out.swap(finished_);
  return out;
}

std::vector<std::uint64_t> StepTracker::take_unwanted() {
  std::vector<std::uint64_t> out;
  out.swap(unwanted_);
  return out;
}

bool StepTracker::owns(std::uint64_t work_id) const {
  return rollouts_.count(work_id) > 0 || evals_.count(work_id) > 0;
}

GroupVariety group_variety(const std::vector<JudgedAnswer>& answers) {
  GroupVariety out;
  out.samples = static_cast<std::uint32_t>(answers.size());
  std::unordered_set<std::string_view> texts;
  for (const JudgedAnswer& answer : answers) {
    texts.insert(answer.text);
    out.mixed = out.mixed || answer.reward != answers.front().reward;
  }
  out.distinct_texts = static_cast<std::uint32_t>(texts.size());
  return out;
}

void count_staleness(const std::map<std::uint64_t, std::uint32_t>& versions,
                     std::uint64_t trained_version, StepCounts* counts) {
  double sum = 0.0, n = 0.0;
  std::uint64_t most = 0;
  for (const auto& [version, count] : versions) {
    const std::uint64_t age = version < trained_version ? trained_version - version : 0;
    sum += static_cast<double>(age) * count;
    n += count;
    most = std::max(most, age);
  }
  counts->staleness_mean = n > 0 ? sum / n : 0.0;
  counts->staleness_max = static_cast<std::uint32_t>(most);
}

}  // namespace dice
