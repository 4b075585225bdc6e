// tools/dice-eval/log_verdicts.h on a real reward log: the verdicts of an evaluation's attempt
// runs become the table's answers, the first attempt that completed a problem wins, other runs
// are left alone, and a run's progress counts its verdicts.
#include "tools/dice-eval/log_verdicts.h"

#include <capnp/message.h>
#include <gtest/gtest.h>

#include "rewardlog/writer.h"
#include "tests/support/temp_dir.h"

namespace dice::eval {
namespace {

struct Answer {
  std::string task;
  std::uint32_t sample = 0;
  bool correct = false;
  float speedup = 0;
  std::uint64_t checksum = 7;
  std::string finding = "";  // a non-fatal finding's check, "" for none
};

rewardlog::LogRecord must(Result<rewardlog::LogRecord> record) {
  EXPECT_TRUE(record.ok()) << record.status().to_string();
  return record.ok() ? std::move(record).value() : rewardlog::LogRecord{};
}

std::vector<rewardlog::LogRecord> run(const std::string& run_id, const std::string& mode,
                                      const std::vector<Answer>& answers) {
  std::vector<rewardlog::LogRecord> records;
  {
    capnp::MallocMessageBuilder m;
    auto r = m.initRoot<schema::RunRecord>();
    r.setRunId(run_id);
    records.push_back(must(rewardlog::encode_record(r.asReader())));
  }
  {
    capnp::MallocMessageBuilder m;
    auto s = m.initRoot<schema::StepRecord>();
    s.setRunId(run_id);
    s.setEvaluation(true);
    s.setRewardMode(mode);
    records.push_back(must(rewardlog::encode_record(s.asReader())));
  }
  for (const Answer& a : answers) {
    capnp::MallocMessageBuilder m;
    auto c = m.initRoot<schema::CandidateRecord>();
    auto v = c.initVerdict();
    v.setRunId(run_id);
    v.setTaskId(a.task);
    v.setSampleIndex(a.sample);
    v.setCompiled(true);
    v.setCorrect(a.correct);
    v.setReward(a.correct ? 1.0f : 0.0f);
    v.setSpeedup(a.speedup);
    auto t = v.initTimings();
    t.setKernelMsMean(1.0f);
    t.setKernelMsStd(0.01f);
    t.setReferenceMsMean(a.speedup);
    t.setReferenceMsStd(0.01f);
    t.setTimingTrials(100);
    if (!a.finding.empty()) {
      auto f = v.initFindings(1)[0];
      f.setCheck(a.finding);
      f.setDetail("a note");
    }
    c.setWeightsChecksum(a.checksum);
    records.push_back(must(rewardlog::encode_record(c.asReader())));
  }
  return records;
}

class DiceEvalLogVerdictsTest : public ::testing::Test {
 protected:
  void write(std::vector<rewardlog::LogRecord> records) {
    rewardlog::RewardLogOptions options;
    options.path = dir_.sub("log");
    auto writer = rewardlog::RewardLogWriter::open(options);
    ASSERT_TRUE(writer.ok()) << writer.status().to_string();
    ASSERT_TRUE((*writer)->append(std::move(records)).ok());
    ASSERT_TRUE((*writer)->close().ok());
  }
  testing_util::TempDir dir_{"dice-eval-log"};
};

// The table's two semantics from one judging: an answer judged correct with libraries allowed
// whose verdict says it called one (library-calls) is not correct for own kernels only; another
// note (fills and copies by torch) changes nothing.
TEST_F(DiceEvalLogVerdictsTest, AnAnswerThatCalledALibraryIsNotOwnKernelsCorrect) {
  ASSERT_NO_FATAL_FAILURE(write(run("eval-x-a1", "full",
                                    {{"lib", 0, true, 2.0f, 7, kLibraryCallsFinding},
                                     {"own", 0, true, 2.0f, 7, "torch-kernels-ran"},
                                     {"wrong", 0, false}})));
  auto logged = read_evaluation_at(dir_.sub("log"), "eval-x", 1);
  ASSERT_TRUE(logged.ok()) << logged.status().to_string();
  EXPECT_TRUE(logged->answers.at("lib")[0].correct);
  EXPECT_FALSE(logged->own_kernels_answers.at("lib")[0].correct);
  EXPECT_FALSE(logged->own_kernels_answers.at("lib")[0].rewarded);
  EXPECT_TRUE(logged->own_kernels_answers.at("lib")[0].judged);
  EXPECT_FLOAT_EQ(static_cast<float>(logged->own_kernels_answers.at("lib")[0].speedup), 2.0f);
  EXPECT_TRUE(logged->own_kernels_answers.at("own")[0].correct);
  EXPECT_FALSE(logged->own_kernels_answers.at("wrong")[0].correct);
}

TEST_F(DiceEvalLogVerdictsTest, NoLogYetIsAnEmptyEvaluation) {
  auto logged = read_evaluation_at(dir_.sub("log"), "eval-x", 1);
  ASSERT_TRUE(logged.ok()) << logged.status().to_string();
  EXPECT_TRUE(logged->runs.empty());
  EXPECT_EQ(logged->last_attempt, 0);
}

TEST_F(DiceEvalLogVerdictsTest, AttemptsAddUpAndTheFirstCompleteOneWins) {
  // Two answers per problem. Attempt 1 was cut short: p1 whole, p2 half. Attempt 2 asked p2 and
  // p3 again. A run of another evaluation (eval-xy-a1) and a summary run (eval-x) are not read.
  auto records =
      run("eval-x-a1", "full", {{"p1", 0, true, 3.0f}, {"p1", 1, false}, {"p2", 0, false}});
  for (auto& r : run("eval-x-a2", "full",
                     {{"p2", 0, true, 1.5f, 9},
                      {"p2", 1, true, 1.5f, 9},
                      {"p3", 1, false, 0, 9},
                      {"p1", 0, false, 0, 9},
                      {"p1", 1, false, 0, 9}})) {
    records.push_back(std::move(r));
  }
  for (auto& r : run("eval-xy-a1", "extraction_only", {{"p1", 0, true}, {"p1", 1, true}})) {
    records.push_back(std::move(r));
  }
  for (auto& r : run("eval-x", "compile_only", {})) records.push_back(std::move(r));
  ASSERT_NO_FATAL_FAILURE(write(std::move(records)));

  auto logged = read_evaluation_at(dir_.sub("log"), "eval-x", 2);
  ASSERT_TRUE(logged.ok()) << logged.status().to_string();
  EXPECT_EQ(logged->runs, (std::vector<std::string>{"eval-x-a1", "eval-x-a2"}));
  EXPECT_EQ(logged->last_attempt, 2);
  EXPECT_EQ(logged->complete, (std::set<std::string>{"p1", "p2"}));
  EXPECT_EQ(logged->reward_modes, (std::set<std::string>{"full"}));
  EXPECT_EQ(logged->weights_checksums, (std::set<std::uint64_t>{7, 9}));
  // p1 from attempt 1 (its first complete one), though attempt 2 judged it again.
  EXPECT_EQ(logged->answered_in.at("p1"), "eval-x-a1");
  const auto& p1 = logged->answers.at("p1");
  ASSERT_EQ(p1.size(), 2u);
  EXPECT_TRUE(p1[0].correct);
  EXPECT_FLOAT_EQ(static_cast<float>(p1[0].speedup), 3.0f);
  EXPECT_EQ(p1[0].timing_trials, 100);
  EXPECT_EQ(logged->answered_in.at("p2"), "eval-x-a2");
  EXPECT_TRUE(logged->answers.at("p2")[0].correct && logged->answers.at("p2")[1].correct);
  // p3: half judged, kept as it is (the other answer is missing).
  const auto& p3 = logged->answers.at("p3");
  EXPECT_FALSE(p3[0].judged);
  EXPECT_TRUE(p3[1].judged);
}

TEST_F(DiceEvalLogVerdictsTest, ProgressCountsARunsVerdicts) {
  ASSERT_NO_FATAL_FAILURE(write(
      run("eval-x-a1", "extraction_only", {{"p1", 0, true}, {"p2", 0, false}, {"p3", 0, true}})));
  rewardlog::RewardLogReaderOptions options;
  options.path = dir_.sub("log");
  auto reader = rewardlog::RewardLogReader::open(options);
  ASSERT_TRUE(reader.ok()) << reader.status().to_string();
  auto progress = run_progress(**reader, "eval-x-a1");
  ASSERT_TRUE(progress.ok());
  EXPECT_EQ(progress->verdicts, 3);
  EXPECT_EQ(progress->correct, 2);
  EXPECT_EQ(progress->rewarded, 2);
  EXPECT_EQ(run_progress(**reader, "eval-x-a2")->verdicts, 0);
}

}  // namespace
}  // namespace dice::eval
