// tools/dice-eval/log_summary.h: the table's rows as reward-log metrics of run <evaluation id>,
// written to a real log and read back the way dice-log does.
#include "tools/dice-eval/log_summary.h"

#include <capnp/message.h>
#include <gtest/gtest.h>

#include <map>

#include "rewardlog/reader.h"
#include "rewardlog/writer.h"
#include "tests/support/temp_dir.h"

namespace dice::eval {
namespace {

TableMeta meta() {
  TableMeta m;
  m.evaluation_id = "eval-x";
  m.model = "/models/m";
  m.problem_set = "/kb";
  m.reward_mode = "extraction_only";
  m.decoding = "greedy";
  m.pass_k = {1};
  m.runs = {"eval-x-a1"};
  return m;
}

EvalTable table() {
  TableRow row;
  row.level = "1";
  row.problems = 4;
  row.exec = row.fast_0 = 0.5;
  row.fast_1 = 0.25;
  row.pass_at_k = {{1, 0.5}};
  row.own_kernels_only.exec = 0.25;
  TableRow none = row;
  none.kind = TaskKind::kInfill;
  none.level = "";
  TableRow all = none;
  all.level = kAllLevels;
  EvalTable t;
  t.rows = {row, none, all};
  return t;
}

TEST(DiceEvalLogSummaryTest, MetricNamesFollowTheLearnersEvalTable) {
  std::map<std::string, double> metrics;
  for (const auto& [name, value] : table_metrics(meta(), table())) metrics[name] = value;
  EXPECT_EQ(metrics.at("eval/end_to_end/level_1/fast_1"), 0.25);
  EXPECT_EQ(metrics.at("eval/end_to_end/level_1/tasks"), 4);
  EXPECT_EQ(metrics.at("eval/end_to_end/level_1/pass_at_1"), 0.5);
  EXPECT_EQ(metrics.at("eval/infill/level_none/exec"), 0.5);
  EXPECT_EQ(metrics.at("eval/infill/exec"), 0.5);  // the "all" row
  EXPECT_EQ(metrics.at("eval/infill/own_kernels_exec"), 0.25);
  EXPECT_EQ(metrics.size(), 3u * 16u);  // 15 measures and pass@1 per row
  EXPECT_NE(summary_note(meta()).find("NO number in this table means a correct kernel"),
            std::string::npos);
}

TEST(DiceEvalLogSummaryTest, TheTableLandsInTheRewardLogAndCanBeRewritten) {
  testing_util::TempDir dir("dice-eval-summary");
  const std::string log = dir.sub("log");
  ASSERT_TRUE(write_table_to_log(log, meta(), table(), "run: {}\n").ok());
  EvalTable changed = table();
  changed.rows[0].fast_1 = 0.75;
  ASSERT_TRUE(write_table_to_log(log, meta(), changed, "run: {}\n").ok());

  rewardlog::RewardLogReaderOptions options;
  options.path = log;
  auto reader = rewardlog::RewardLogReader::open(options);
  ASSERT_TRUE(reader.ok()) << reader.status().to_string();
  auto run = (*reader)->run("eval-x");
  ASSERT_TRUE(run.ok()) << run.status().to_string();
  EXPECT_NE(std::string(run->get().getNote().cStr()).find("verdicts in runs eval-x-a1"),
            std::string::npos);
  auto metric = (*reader)->metrics("eval-x", std::string("eval/end_to_end/level_1/fast_1"));
  ASSERT_TRUE(metric.ok());
  ASSERT_EQ(metric->size(), 1u);  // the same key: the latest table wins
  EXPECT_EQ(metric->front().get().getValue(), 0.75);
}

TEST(DiceEvalLogSummaryTest, ALearnersRunIsNeverOverwritten) {
  testing_util::TempDir dir("dice-eval-summary");
  const std::string log = dir.sub("log");
  EXPECT_TRUE(check_table_run_id(log, "eval-x").ok());  // no log yet
  {
    rewardlog::RewardLogOptions options;
    options.path = log;
    auto writer = rewardlog::RewardLogWriter::open(options);
    ASSERT_TRUE(writer.ok());
    capnp::MallocMessageBuilder message;
    auto run = message.initRoot<schema::RunRecord>();
    run.setRunId("eval-x");
    run.setNote("policy update: TraceRL");
    ASSERT_TRUE((*writer)->append_record(run.asReader()).ok());
    ASSERT_TRUE((*writer)->close().ok());
  }
  const Status refused = write_table_to_log(log, meta(), table(), "");
  EXPECT_EQ(refused.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(refused.message(), "reward log " + log +
                                   " holds a run 'eval-x' that is not a dice-eval table: give "
                                   "the evaluation another --id");
  EXPECT_TRUE(check_table_run_id(log, "eval-y").ok());
}

}  // namespace
}  // namespace dice::eval
