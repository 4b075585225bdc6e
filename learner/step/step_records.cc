#include "learner/step/step_records.h"

#include <capnp/message.h>

#include <cmath>
#include <limits>

#include "rewardlog/keys.h"
#include "rewardlog/step_internal_errors.h"

namespace dice {
namespace {

double rate(std::uint32_t part, std::uint32_t whole) {
  return whole == 0 ? 0.0 : static_cast<double>(part) / whole;
}

}  // namespace

double mean_reward(const StepCounts& counts) {
  return counts.verdicts == 0 ? 0.0 : counts.reward_sum / counts.verdicts;
}

Result<rewardlog::LogRecord> task_record(const LearnerTask& task, const StepSettings& settings,
                                         std::int64_t now_ms) {
  capnp::MallocMessageBuilder message;
  auto record = message.initRoot<schema::TaskRecord>();
  record.setRunId(settings.run_id);
  record.setTaskId(task.id);
  record.setPhase(task.kind == TaskKind::kInfill ? schema::Phase::INFILL : schema::Phase::E2E);
  record.setLevel(task.level);
  record.setReferenceSource(task.reference_source);
  record.setInfillPrefix(task.infill_prefix);
  record.setInfillSuffix(task.infill_suffix);
  record.setFirstStep(settings.step);
  record.setWrittenUnixMillis(now_ms);
  return rewardlog::encode_record(record.asReader());
}

Result<std::vector<rewardlog::LogRecord>> group_records(const FinishedGroup& group,
                                                        const StepSettings& settings,
                                                        LoggedOnce* logged, std::int64_t now_ms) {
  std::vector<rewardlog::LogRecord> records;
  // A group without a judged sample leaves no candidate that would need its task.
  if (!group.samples.empty() && logged->task_ids.count(group.task->id) == 0) {
    DICE_ASSIGN_OR_RETURN(rewardlog::LogRecord task, task_record(*group.task, settings, now_ms));
    records.push_back(std::move(task));
    logged->task_ids.insert(group.task->id);
  }
  for (const FinishedSample& sample : group.samples) {
    auto verdict = sample.verdict.root().getBody().getVerdict();
    capnp::MallocMessageBuilder message;
    auto record = message.initRoot<schema::CandidateRecord>();
    record.setVerdict(verdict);
    auto v = record.getVerdict();
    v.setRunId(settings.run_id);
    v.setStep(settings.step);
    v.setTaskId(group.task->id);
    v.setGroup(group.group);
    v.setSampleIndex(sample.sample_index);
    record.setResponseText(sample.response_text);
    // The file the reward service ran, as its verdict names it.
    record.setEvaluatedSource(verdict.getEvaluatedSource());
    record.setAdvantage(static_cast<float>(sample.advantage));
    record.setWeightsChecksum(sample.weights_checksum);
    record.setRolloutWorker(sample.rollout_worker);
    record.setWrittenUnixMillis(now_ms);
    const std::vector<std::int32_t>& steps = sample.trace.unmask_steps;
    auto unmask = record.initUnmaskStep(static_cast<unsigned>(steps.size()));
    for (unsigned j = 0; j < steps.size(); ++j) unmask.set(j, static_cast<std::uint16_t>(steps[j]));
    // Offsets that do not pair one to one with the trace's tokens would split the text wrongly.
    if (sample.token_text_ends.size() == steps.size()) {
      auto ends = record.initTokenTextEnds(static_cast<unsigned>(steps.size()));
      for (unsigned j = 0; j < steps.size(); ++j) ends.set(j, sample.token_text_ends[j]);
    }
    DICE_ASSIGN_OR_RETURN(rewardlog::LogRecord encoded,
                          rewardlog::encode_record(record.asReader()));
    records.push_back(std::move(encoded));

    for (auto build : verdict.getBuilds()) {
      const std::string hash = build.getSourceHash().cStr();
      if (!rewardlog::check_source_hash(hash).ok() || !logged->kernel_hashes.insert(hash).second)
        continue;
      capnp::MallocMessageBuilder kernel_message;
      auto kernel = kernel_message.initRoot<schema::KernelRecord>();
      kernel.setSourceHash(hash);
      kernel.setCompiled(build.getCompiled());
      kernel.setCompileLog(build.getLog());
      kernel.setCompileSeconds(build.getCompileSeconds());
      kernel.setFirstSeenRunId(settings.run_id);
      kernel.setFirstSeenUnixMillis(now_ms);
      DICE_ASSIGN_OR_RETURN(rewardlog::LogRecord encoded_kernel,
                            rewardlog::encode_record(kernel.asReader()));
      records.push_back(std::move(encoded_kernel));
    }
  }
  return records;
}

Result<rewardlog::LogRecord> step_record(const StepCounts& counts, const StepSettings& settings,
                                         TaskKind kind, StepTiming timing,
                                         const PolicyUpdate& update) {
  capnp::MallocMessageBuilder message;
  auto record = message.initRoot<schema::StepRecord>();
  record.setRunId(settings.run_id);
  record.setStep(settings.step);
  record.setPhase(kind == TaskKind::kInfill ? schema::Phase::INFILL : schema::Phase::E2E);
  record.setPolicyVersion(settings.policy_version);
  record.setNumTasks(counts.tasks);
  record.setNumCandidates(counts.verdicts);
  record.setNumCompiled(counts.compiled);
  record.setNumCorrect(counts.correct);
  record.setMeanReward(static_cast<float>(mean_reward(counts)));
  record.setNumGroupsDropped(counts.groups_dropped);
  const float not_computed = std::numeric_limits<float>::quiet_NaN();
  record.setLoss(update.ran ? static_cast<float>(update.loss) : not_computed);
  record.setKlDivergence(update.ran ? static_cast<float>(update.kl) : not_computed);
  record.setGradNorm(update.ran ? static_cast<float>(update.grad_norm) : not_computed);
  record.setStartedUnixMillis(timing.started_ms);
  record.setFinishedUnixMillis(timing.finished_ms);
  record.setPhaseName(settings.phase_name);
  record.setEvaluation(settings.evaluation);
  record.setRewardMode(settings.reward_mode);
  record.setStalenessMean(static_cast<float>(counts.staleness_mean));
  record.setStalenessMax(counts.staleness_max);
  record.setRolloutAhead(settings.rollout_ahead);
  record.setClipFraction(update.ran ? static_cast<float>(update.clip_fraction) : not_computed);
  rewardlog::set_exploration_counts(counts.exploration, record);
  rewardlog::set_step_internal_errors({counts.internal_errors, internal_error_share(counts)},
                                      record);
  return rewardlog::encode_record(record.asReader());
}

Result<std::vector<rewardlog::LogRecord>> metric_records(const StepCounts& counts,
                                                         const StepSettings& settings,
                                                         StepTiming timing,
                                                         const PolicyUpdate& update) {
  const double seconds = std::max<std::int64_t>(timing.finished_ms - timing.started_ms, 1) / 1000.0;
  std::vector<std::pair<const char*, double>> values = {
      {"reward/mean", mean_reward(counts)},
      {"reward/correct_rate", rate(counts.correct, counts.verdicts)},
      {"reward/compile_rate", rate(counts.compiled, counts.verdicts)},
      {"rollout/candidates_per_s", counts.candidates / seconds},
      {"rollout/truncated_rate", rate(counts.truncated, counts.candidates)},
      {"rollout/generation_seconds_mean",
       counts.candidates ? counts.generation_seconds / counts.candidates : 0.0},
      {"learner/groups_dropped", counts.groups_dropped},
      {"learner/groups_skipped", counts.groups_skipped},
      {"learner/candidates_stale", counts.stale_dropped},
      {"learner/staleness_mean", counts.staleness_mean},
      {"learner/staleness_max", counts.staleness_max},
      {"learner/worker_errors", counts.rollout_errors + counts.eval_errors},
      {"reward/internal_errors", counts.internal_errors},
  };
  if (const double share = internal_error_share(counts); !std::isnan(share)) {
    values.emplace_back("reward/internal_error_share", share);
  }
  if (counts.exploration.groups_judged > 0) {
    const rewardlog::ExplorationRates explored = rewardlog::exploration_rates(counts.exploration);
    values.insert(values.end(), {{"rollout/mixed_group_share", explored.mixed_share},
                                 {"rollout/distinct_texts_mean", explored.distinct_texts_mean},
                                 {"rollout/distinct_text_share", explored.distinct_share}});
  }
  if (update.ran) {
    values.insert(values.end(), {{"learner/loss", update.loss},
                                 {"learner/kl", update.kl},
                                 {"learner/grad_norm", update.grad_norm},
                                 {"learner/clip_fraction", update.clip_fraction},
                                 {"learner/ratio_mean", update.mean_ratio},
                                 {"learner/optimizer_steps", double(update.optimizer_steps)},
                                 {"learner/update_seconds", update.seconds},
                                 {"learner/importance_mean", update.importance_mean},
                                 {"learner/padding_fraction", update.padding_fraction},
                                 {"learner/policy_version", double(update.policy_version)}});
  }
  std::vector<rewardlog::LogRecord> records;
  for (const auto& [name, value] : values) {
    DICE_ASSIGN_OR_RETURN(
        rewardlog::LogRecord encoded,
        metric_record(settings.run_id, name, settings.step, value, timing.finished_ms));
    records.push_back(std::move(encoded));
  }
  return records;
}

Result<rewardlog::LogRecord> metric_record(const std::string& run_id, const std::string& name,
                                           std::uint64_t step, double value,
                                           std::int64_t unix_millis) {
  capnp::MallocMessageBuilder message;
  auto record = message.initRoot<schema::MetricRecord>();
  record.setRunId(run_id);
  record.setName(name);
  record.setStep(step);
  record.setValue(value);
  record.setUnixMillis(unix_millis);
  return rewardlog::encode_record(record.asReader());
}

}  // namespace dice
