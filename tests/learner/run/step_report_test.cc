// learner/run/step_report.h: the series a step adds beside its StepRecord, as the dashboards read
// them (names, values, the step they are under).
#include "learner/run/step_report.h"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "rewardlog/record_codec.h"

namespace dice {
namespace {

// Metric records as name -> value, each checked to be under `step` of run "run".
std::map<std::string, double> values_by_name(const std::vector<rewardlog::LogRecord>& records,
                                             std::uint64_t step) {
  std::map<std::string, double> series;
  for (const rewardlog::LogRecord& r : records) {
    auto metric = rewardlog::decode_record<schema::MetricRecord>(r.key, r.value);
    EXPECT_TRUE(metric.ok()) << metric.status().to_string();
    if (!metric.ok()) continue;
    EXPECT_EQ(std::string(metric->get().getRunId().cStr()), "run");
    EXPECT_EQ(metric->get().getStep(), step);
    series[metric->get().getName().cStr()] = metric->get().getValue();
  }
  return series;
}

StepSettings settings_at(std::uint64_t step) {
  StepSettings settings;
  settings.run_id = "run";
  settings.step = step;
  return settings;
}

TEST(StepReportTest, AnUpdateThatRanAddsItsLearningRate) {
  PolicyUpdate update;
  update.carried_out = 3;
  EXPECT_EQ(values_by_name(carry_records(update, settings_at(7)).value(), 7),
            (std::map<std::string, double>{{"learner/carried_samples", 3}}));
  update.ran = true;
  update.lr = 2e-6;
  update.carried_out = 0;
  EXPECT_EQ(values_by_name(carry_records(update, settings_at(8)).value(), 8),
            (std::map<std::string, double>{{"learner/carried_samples", 0}, {"learner/lr", 2e-6}}));
}

TEST(StepReportTest, TheScheduleIsNamedByPhaseAndLevel) {
  PhasePlan plan;
  plan.name = "mixed";
  ScheduleReport report;
  report.open_levels = 2;
  report.passed_over = 5;
  report.band_fallbacks = 1;
  report.rolling_correct = {{"1", 0.75}, {"", 0.5}};
  EXPECT_EQ(values_by_name(schedule_records(plan, report, settings_at(4)).value(), 4),
            (std::map<std::string, double>{{"schedule/mixed/open_levels", 2},
                                           {"schedule/mixed/passed_over", 5},
                                           {"schedule/mixed/band_fallbacks", 1},
                                           {"schedule/mixed/level_1/rolling_correct", 0.75},
                                           {"schedule/mixed/level_none/rolling_correct", 0.5}}));
}

}  // namespace
}  // namespace dice
