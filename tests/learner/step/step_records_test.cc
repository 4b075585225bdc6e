// Records built from a finished group: keys come from the learner's books, kernels once each.
#include "learner/step/step_records.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <string>

#include "net/wire/envelope.h"
#include "rewardlog/keys.h"

namespace dice {
namespace {

FinishedSample judged(std::uint32_t index, const std::vector<std::string>& hashes, float reward) {
  capnp::MallocMessageBuilder message;
  auto verdict = wire::init_envelope(message, "w", "run").getBody().initVerdict();
  // A confused worker: wrong run, step, task and sample.
  verdict.setRunId("other-run");
  verdict.setStep(99);
  verdict.setTaskId("other-task");
  verdict.setSampleIndex(42);
  verdict.setReward(reward);
  verdict.setCompiled(true);
  auto builds = verdict.initBuilds(static_cast<unsigned>(hashes.size()));
  for (unsigned i = 0; i < hashes.size(); ++i) {
    builds[i].setSourceHash(hashes[i]);
    builds[i].setCompiled(true);
  }
  verdict.setEvaluatedSource("import torch\n");
  auto decoded = wire::decode_envelope(wire::encode(message));
  EXPECT_TRUE(decoded.ok());
  return FinishedSample{index,
                        "```python\nprint(1)\n```\n",
                        std::move(decoded).value(),
                        reward > 0 ? 1.0 : -1.0,
                        TraceSample{},
                        0x5eedu,
                        "rollout-" + std::to_string(index),
                        true,
                        {}};
}

// Metric records as name -> value.
std::map<std::string, double> values_by_name(const std::vector<rewardlog::LogRecord>& metrics) {
  std::map<std::string, double> series;
  for (const auto& m : metrics) {
    auto metric = rewardlog::decode_record<schema::MetricRecord>(m.key, m.value);
    EXPECT_TRUE(metric.ok()) << metric.status().to_string();
    if (metric.ok()) series[metric->get().getName().cStr()] = metric->get().getValue();
  }
  return series;
}

TEST(StepRecordsTest, CandidateKeysComeFromTheLearnerAndKernelsAreWrittenOnce) {
  LearnerTask task;
  task.id = "t7";
  task.kind = TaskKind::kEndToEnd;
  FinishedGroup group;
  group.group = 3;
  group.task = &task;
  group.complete = true;
  group.samples.push_back(judged(0, {"abc123", "def456"}, 1.0f));
  group.samples.push_back(judged(1, {"abc123"}, 0.0f));
  StepSettings settings;
  settings.run_id = "run";
  settings.step = 5;
  LoggedOnce seen;
  auto records = group_records(group, settings, &seen, 1000);
  ASSERT_TRUE(records.ok()) << records.status().to_string();
  std::vector<std::string> candidate_keys, kernel_keys;
  for (const auto& r : *records) {
    if (r.family == rewardlog::Family::kCandidates) {
      candidate_keys.push_back(r.key);
      auto candidate = rewardlog::decode_record<schema::CandidateRecord>(r.key, r.value);
      ASSERT_TRUE(candidate.ok());
      EXPECT_EQ(candidate->get().getWeightsChecksum(), 0x5eedu);
      EXPECT_EQ(std::string(candidate->get().getRolloutWorker().cStr()).rfind("rollout-", 0), 0u);
    }
    if (r.family == rewardlog::Family::kKernels) kernel_keys.push_back(r.key);
  }
  EXPECT_EQ(candidate_keys,
            (std::vector<std::string>{rewardlog::candidate_key("run", 5, "t7", 0),
                                      rewardlog::candidate_key("run", 5, "t7", 1)}));
  EXPECT_EQ(kernel_keys, (std::vector<std::string>{rewardlog::kernel_key("abc123"),
                                                   rewardlog::kernel_key("def456")}));
  // The same hashes in a later group are not written again.
  auto again = group_records(group, settings, &seen, 2000);
  ASSERT_TRUE(again.ok());
  for (const auto& r : *again) EXPECT_NE(r.family, rewardlog::Family::kKernels);
}

// A group's candidates carry their trace and token offsets; the task goes into the same records
// once per run, with its reference, and a later group of the task does not repeat it.
TEST(StepRecordsTest, CandidatesCarryTheTraceAndTheTaskIsLoggedOnce) {
  LearnerTask task;
  task.id = "t9";
  task.kind = TaskKind::kInfill;
  task.level = "2";
  task.reference_source = "class Model(torch.nn.Module): ...\n";
  task.infill_prefix = "import torch\n";
  task.infill_suffix = "class ModelNew: ...\n";
  FinishedGroup group;
  group.group = 1;
  group.task = &task;
  group.complete = true;
  group.samples.push_back(judged(0, {}, 1.0f));
  group.samples[0].trace.unmask_steps = {3, 0, 1, 2};
  group.samples[0].token_text_ends = {3, 9, 10, 25};
  group.samples.push_back(judged(1, {}, 0.0f));
  group.samples[1].trace.unmask_steps = {0, 1};
  group.samples[1].token_text_ends = {4};  // does not pair with the trace: left out
  StepSettings settings;
  settings.run_id = "run";
  settings.step = 4;
  LoggedOnce logged;
  auto records = group_records(group, settings, &logged, 1000);
  ASSERT_TRUE(records.ok()) << records.status().to_string();
  std::vector<std::vector<std::uint16_t>> steps;
  std::vector<std::vector<std::uint32_t>> ends;
  int tasks = 0;
  for (const auto& r : *records) {
    if (r.family == rewardlog::Family::kTasks) {
      ++tasks;
      EXPECT_EQ(r.key, rewardlog::task_key("run", "t9"));
      auto t = rewardlog::decode_record<schema::TaskRecord>(r.key, r.value);
      ASSERT_TRUE(t.ok()) << t.status().to_string();
      EXPECT_EQ(t->get().getPhase(), schema::Phase::INFILL);
      EXPECT_EQ(std::string(t->get().getLevel().cStr()), "2");
      EXPECT_EQ(std::string(t->get().getReferenceSource().cStr()), task.reference_source);
      EXPECT_EQ(std::string(t->get().getInfillPrefix().cStr()), task.infill_prefix);
      EXPECT_EQ(std::string(t->get().getInfillSuffix().cStr()), task.infill_suffix);
      EXPECT_EQ(t->get().getFirstStep(), 4u);
    }
    if (r.family != rewardlog::Family::kCandidates) continue;
    auto c = rewardlog::decode_record<schema::CandidateRecord>(r.key, r.value);
    ASSERT_TRUE(c.ok()) << c.status().to_string();
    steps.emplace_back();
    for (const std::uint16_t step : c->get().getUnmaskStep()) steps.back().push_back(step);
    ends.emplace_back();
    for (const std::uint32_t end : c->get().getTokenTextEnds()) ends.back().push_back(end);
  }
  EXPECT_EQ(tasks, 1);
  EXPECT_EQ(steps, (std::vector<std::vector<std::uint16_t>>{{3, 0, 1, 2}, {0, 1}}));
  EXPECT_EQ(ends, (std::vector<std::vector<std::uint32_t>>{{3, 9, 10, 25}, {}}));

  settings.step = 5;
  auto again = group_records(group, settings, &logged, 2000);
  ASSERT_TRUE(again.ok());
  for (const auto& r : *again) EXPECT_NE(r.family, rewardlog::Family::kTasks);
  // Another run (a fresh LoggedOnce) logs it again.
  LoggedOnce fresh;
  auto other = group_records(group, settings, &fresh, 3000);
  ASSERT_TRUE(other.ok());
  EXPECT_EQ(other->front().family, rewardlog::Family::kTasks);
}

TEST(StepRecordsTest, StepRecordSaysNoUpdateRan) {
  StepCounts counts;
  counts.tasks = 2;
  counts.verdicts = 4;
  counts.correct = 1;
  counts.reward_sum = 1.0;
  counts.candidates = 4;
  counts.truncated = 1;
  counts.generation_seconds = 6.0;
  StepSettings settings;
  settings.run_id = "run";
  settings.step = 1;
  auto record = step_record(counts, settings, TaskKind::kInfill, StepTiming{1000, 3000});
  ASSERT_TRUE(record.ok());
  auto decoded = rewardlog::decode_record<schema::StepRecord>(record->key, record->value);
  ASSERT_TRUE(decoded.ok()) << decoded.status().to_string();
  auto step = decoded->get();
  EXPECT_EQ(step.getPhase(), schema::Phase::INFILL);
  EXPECT_FLOAT_EQ(step.getMeanReward(), 0.25f);
  EXPECT_TRUE(std::isnan(step.getLoss()));
  EXPECT_TRUE(std::isnan(step.getGradNorm()));
  EXPECT_TRUE(std::isnan(step.getClipFraction()));
  auto metrics = metric_records(counts, settings, StepTiming{1000, 3000});
  ASSERT_TRUE(metrics.ok());
  EXPECT_EQ(metrics->size(), 14u);
  std::map<std::string, double> series = values_by_name(*metrics);
  EXPECT_DOUBLE_EQ(series["rollout/truncated_rate"], 0.25);
  EXPECT_DOUBLE_EQ(series["reward/internal_errors"], 0.0);
  EXPECT_DOUBLE_EQ(series["reward/internal_error_share"], 0.0);
  EXPECT_DOUBLE_EQ(series["rollout/generation_seconds_mean"], 1.5);
  EXPECT_DOUBLE_EQ(series["learner/staleness_mean"], 0.0);  // the synchronous loop
}

TEST(StepRecordsTest, TheStepRecordSaysHowStaleItsCandidatesWere) {
  StepCounts counts;
  counts.verdicts = 4;
  // Versions 5 (x2), 6 and 7 trained from version 7: ages 2, 2, 1, 0.
  count_staleness({{5, 2}, {6, 1}, {7, 1}}, 7, &counts);
  EXPECT_DOUBLE_EQ(counts.staleness_mean, 1.25);
  EXPECT_EQ(counts.staleness_max, 2u);
  StepSettings settings;
  settings.run_id = "run";
  settings.step = 9;
  settings.rollout_ahead = 2;
  auto record = step_record(counts, settings, TaskKind::kEndToEnd, StepTiming{1000, 3000});
  ASSERT_TRUE(record.ok());
  auto decoded = rewardlog::decode_record<schema::StepRecord>(record->key, record->value);
  ASSERT_TRUE(decoded.ok());
  EXPECT_FLOAT_EQ(decoded->get().getStalenessMean(), 1.25f);
  EXPECT_EQ(decoded->get().getStalenessMax(), 2u);
  EXPECT_EQ(decoded->get().getRolloutAhead(), 2u);
  auto metrics = metric_records(counts, settings, StepTiming{1000, 3000});
  ASSERT_TRUE(metrics.ok());
  std::map<std::string, double> series = values_by_name(*metrics);
  EXPECT_DOUBLE_EQ(series["learner/staleness_mean"], 1.25);
  EXPECT_DOUBLE_EQ(series["learner/staleness_max"], 2.0);
  // A candidate newer than the trained version (a worker that had loaded later weights) is 0 old.
  count_staleness({{8, 3}}, 7, &counts);
  EXPECT_DOUBLE_EQ(counts.staleness_mean, 0.0);
  EXPECT_EQ(counts.staleness_max, 0u);
}

// How much the step explored reaches the StepRecord as counts and the metric series as rates.
TEST(StepRecordsTest, TheStepRecordSaysHowMuchTheRolloutsExplored) {
  StepCounts counts;
  counts.verdicts = 12;
  counts.exploration.group_size = 4;
  counts.exploration.add_group(4, 1, /*mixed=*/false, /*dropped=*/true);
  counts.exploration.add_group(4, 3, /*mixed=*/true, /*dropped=*/false);
  counts.exploration.add_group(4, 2, /*mixed=*/true, /*dropped=*/false);
  StepSettings settings;
  settings.run_id = "run";
  settings.step = 5;
  auto record = step_record(counts, settings, TaskKind::kEndToEnd, StepTiming{1000, 3000});
  ASSERT_TRUE(record.ok());
  auto decoded = rewardlog::decode_record<schema::StepRecord>(record->key, record->value);
  ASSERT_TRUE(decoded.ok());
  const auto step = decoded->get();
  EXPECT_EQ(step.getGroupSize(), 4u);
  EXPECT_EQ(step.getGroupsJudged(), 3u);
  EXPECT_EQ(step.getGroupsMixed(), 2u);
  EXPECT_EQ(step.getJudgedSamples(), 12u);
  EXPECT_EQ(step.getDistinctTexts(), 6u);
  EXPECT_EQ(step.getDroppedGroupsJudged(), 1u);
  EXPECT_EQ(step.getDroppedDistinctTexts(), 1u);
  auto metrics = metric_records(counts, settings, StepTiming{1000, 3000});
  ASSERT_TRUE(metrics.ok());
  EXPECT_EQ(metrics->size(), 17u);
  std::map<std::string, double> series = values_by_name(*metrics);
  EXPECT_DOUBLE_EQ(series["rollout/mixed_group_share"], 2.0 / 3.0);
  EXPECT_DOUBLE_EQ(series["rollout/distinct_texts_mean"], 2.0);
  EXPECT_DOUBLE_EQ(series["rollout/distinct_text_share"], 0.5);
}

// The verdicts the reward service could not reach reach the StepRecord and the metric series:
// their count and their share of every verdict, scored or left unscored.
TEST(StepRecordsTest, TheStepRecordSaysHowManyVerdictsTheServiceCouldNotReach) {
  StepCounts counts;
  counts.verdicts = 30;  // 3 of them internal errors scored as failures
  counts.internal_errors = 5;
  counts.unscored_internal_errors = 2;  // as learner.internal_errors unscored leaves them
  StepSettings settings;
  settings.run_id = "run";
  settings.step = 4;
  auto record = step_record(counts, settings, TaskKind::kEndToEnd, StepTiming{1000, 3000});
  ASSERT_TRUE(record.ok());
  auto decoded = rewardlog::decode_record<schema::StepRecord>(record->key, record->value);
  ASSERT_TRUE(decoded.ok());
  EXPECT_EQ(decoded->get().getNumInternalErrors(), 5u);
  EXPECT_FLOAT_EQ(decoded->get().getInternalErrorShare(), 5.0f / 32.0f);
  auto metrics = metric_records(counts, settings, StepTiming{1000, 3000});
  ASSERT_TRUE(metrics.ok());
  std::map<std::string, double> series = values_by_name(*metrics);
  EXPECT_DOUBLE_EQ(series["reward/internal_errors"], 5.0);
  EXPECT_DOUBLE_EQ(series["reward/internal_error_share"], 5.0 / 32.0);

  // A step without a verdict has no share: NaN in the record, no point in the series.
  record = step_record(StepCounts{}, settings, TaskKind::kEndToEnd, StepTiming{1000, 3000});
  ASSERT_TRUE(record.ok());
  decoded = rewardlog::decode_record<schema::StepRecord>(record->key, record->value);
  ASSERT_TRUE(decoded.ok());
  EXPECT_TRUE(std::isnan(decoded->get().getInternalErrorShare()));
  metrics = metric_records(StepCounts{}, settings, StepTiming{1000, 3000});
  ASSERT_TRUE(metrics.ok());
  EXPECT_EQ(values_by_name(*metrics).count("reward/internal_error_share"), 0u);
}

TEST(StepRecordsTest, AnUpdateThatRanFillsTheLossAndItsSeries) {
  StepCounts counts;
  counts.verdicts = 4;
  StepSettings settings;
  settings.run_id = "run";
  settings.step = 3;
  settings.policy_version = 3;
  PolicyUpdate update;
  update.ran = true;
  update.policy_version = 4;
  update.loss = -0.25;
  update.kl = 0.001;
  update.grad_norm = 0.5;
  update.clip_fraction = 0.0625;
  update.optimizer_steps = 2;
  update.padding_fraction = 0.125;
  auto record = step_record(counts, settings, TaskKind::kEndToEnd, StepTiming{1000, 3000}, update);
  ASSERT_TRUE(record.ok());
  auto decoded = rewardlog::decode_record<schema::StepRecord>(record->key, record->value);
  ASSERT_TRUE(decoded.ok());
  EXPECT_EQ(decoded->get().getPolicyVersion(), 3u);  // the version that sampled the step
  EXPECT_FLOAT_EQ(decoded->get().getLoss(), -0.25f);
  EXPECT_FLOAT_EQ(decoded->get().getKlDivergence(), 0.001f);
  EXPECT_FLOAT_EQ(decoded->get().getGradNorm(), 0.5f);
  EXPECT_FLOAT_EQ(decoded->get().getClipFraction(), 0.0625f);
  auto metrics = metric_records(counts, settings, StepTiming{1000, 3000}, update);
  ASSERT_TRUE(metrics.ok());
  EXPECT_EQ(metrics->size(), 24u);
  bool saw_version = false, saw_steps = false, saw_padding = false;
  for (const auto& m : *metrics) {
    auto metric = rewardlog::decode_record<schema::MetricRecord>(m.key, m.value);
    ASSERT_TRUE(metric.ok());
    if (std::string(metric->get().getName().cStr()) == "learner/policy_version") {
      EXPECT_EQ(metric->get().getValue(), 4.0);
      saw_version = true;
    }
    if (std::string(metric->get().getName().cStr()) == "learner/optimizer_steps") {
      EXPECT_EQ(metric->get().getValue(), 2.0);
      saw_steps = true;
    }
    if (std::string(metric->get().getName().cStr()) == "learner/padding_fraction") {
      EXPECT_EQ(metric->get().getValue(), 0.125);
      saw_padding = true;
    }
  }
  EXPECT_TRUE(saw_version);
  EXPECT_TRUE(saw_steps);
  EXPECT_TRUE(saw_padding);
}

}  // namespace
}  // namespace dice
