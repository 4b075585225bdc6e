// dice-learner end to end: the real executable as a child process with a config written here,
// rollout and reward worker test doubles as child processes, real loopback TCP sockets, a real
// RocksDB reward log read back with RewardLogReader. Every wait polls with a deadline.
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "common/disk_space.h"
#include "common/remove_tree.h"
#include "rewardlog/reader.h"
#include "tests/support/child_process.h"
#include "tests/support/free_port.h"
#include "tests/support/small_tmpfs.h"

namespace dice {
namespace {

using testing_util::free_port;

namespace fs = std::filesystem;
using std::chrono::milliseconds;

constexpr auto kDeadline = std::chrono::seconds(25);

using testing_util::ChildProcess;

// The body of GET /metrics from 127.0.0.1:port ("" when the request fails).
std::string scrape_metrics(int port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<std::uint16_t>(port));
  std::string response;
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0) {
    const std::string request = "GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
    if (write(fd, request.data(), request.size()) == static_cast<ssize_t>(request.size())) {
      char buffer[4096];
      ssize_t n;
      while ((n = read(fd, buffer, sizeof(buffer))) > 0) response.append(buffer, n);
    }
  }
  close(fd);
  return response;
}

std::string read_file(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

class LearnerIntegrationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("dice_learner_it_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    ASSERT_TRUE(remove_tree(dir_).ok());
    fs::create_directories(dir_);
    port_ = free_port();
    metrics_port_ = free_port();
    while (metrics_port_ == port_) metrics_port_ = free_port();
    // Five tasks, levels out of order, so level_order and cycling both show in the steps.
    std::ofstream(dir_ / "tasks.json") << R"([
      {"idx": 10, "level": "2", "pytorch_code": "import torch\n# ten"},
      {"idx": 11, "level": "1", "pytorch_code": "import torch\n# eleven"},
      {"idx": 12, "level": "1", "pytorch_code": "import torch\n# twelve"},
      {"idx": 13, "level": "3", "pytorch_code": "import torch\n# thirteen"},
      {"idx": 14, "level": "1", "pytorch_code": "import torch\n# fourteen"}
    ])";
  }
  void TearDown() override {
    if (!HasFailure()) {
      EXPECT_TRUE(remove_tree(dir_).ok());
    }
  }

  // Writes the run's config; `steps` steps of 3 tasks x 2 samples in one phase, after the
  // phases of `first_phases` (curriculum YAML list items). Without `policy_dir` the run
  // evaluates only (learner.update_policy false).
  std::string write_config(int steps, const std::string& task_file = "tasks.json",
                           int group_timeout_s = 20, const std::string& policy_dir = "",
                           const std::string& first_phases = "") {
    std::ofstream(dir_ / "curriculum.yaml") << "phases:\n"
                                            << first_phases << "  - name: e2e\n"
                                            << "    kind: end_to_end\n"
                                            << "    task_files: [" << task_file << "]\n"
                                            << "    level_order: [\"1\", \"2\"]\n"
                                            << "    steps: " << steps << "\n"
                                            << "    tasks_per_step: 3\n"
                                            << "    samples_per_task: 2\n"
                                            << phase_extra_;
    std::ofstream(dir_ / "dice.yaml")
        << "run:\n  id: it-run\n  reward_log_path: log\n"
        << "curriculum_file: curriculum.yaml\n"
        << "learner:\n  group_timeout_seconds: " << group_timeout_s
        << "\n  drain_timeout_seconds: 10\n"
        << (policy_dir.empty() ? "  update_policy: false\n  checkpoint:\n    dir: checkpoints\n"
                               : "  update_policy: true\n  dtype: fp32\n"
                                 "  checkpoint:\n    dir: checkpoints\n    interval_steps: 2\n"
                                 "  optimizer:\n    lr: 1e-3\n    grad_accumulation: 2\n")
        << learner_extra_
        << "rollout:\n  model_path: " << (policy_dir.empty() ? "no-model-needed" : policy_dir)
        << "\n"
        << "cluster:\n  learner:\n    host: 127.0.0.1\n    port: " << port_
        << "\n    metrics_port: " << metrics_port_
        << "\n  heartbeat:\n    interval_ms: 100\n    misses_before_dead: 20\n";
    return (dir_ / "dice.yaml").string();
  }

  std::unique_ptr<ChildProcess> start_learner(const std::string& config,
                                              const std::vector<std::string>& more = {},
                                              const std::string& log_name = "learner.log") {
    std::vector<std::string> args = {"--config", config};
    args.insert(args.end(), more.begin(), more.end());
    return std::make_unique<ChildProcess>(DICE_LEARNER_BINARY, args, (dir_ / log_name).string());
  }
  // Waits until the log (at `path`: open_log's) holds at least `count` steps of it-run; the
  // reader (a secondary) stays open in *log.
  bool wait_for_steps(std::size_t count, std::unique_ptr<rewardlog::RewardLogReader>* log,
                      const std::string& path = "") {
    const auto end = std::chrono::steady_clock::now() + kDeadline;
    while (std::chrono::steady_clock::now() < end) {
      if (!*log) *log = open_log(path);
      if (*log && (*log)->catch_up().ok()) {
        auto steps = (*log)->steps("it-run");
        if (steps.ok() && steps->size() >= count) return true;
      }
      std::this_thread::sleep_for(milliseconds(10));
    }
    return false;
  }
  std::unique_ptr<ChildProcess> start_worker(const char* binary, const std::string& id,
                                             int sleep_ms = 0) {
    return std::make_unique<ChildProcess>(
        binary,
        std::vector<std::string>{"--endpoint", "tcp://127.0.0.1:" + std::to_string(port_), "--id",
                                 id, "--heartbeat-ms", "100", "--sleep-ms",
                                 std::to_string(sleep_ms)},
        worker_log_path(id).string());
  }
  // The run's reward log (`path`: one at another path than the config's).
  std::unique_ptr<rewardlog::RewardLogReader> open_log(const std::string& path = "") {
    rewardlog::RewardLogReaderOptions options;
    options.path = path.empty() ? (dir_ / "log").string() : path;
    auto reader = rewardlog::RewardLogReader::open(options);
    if (!reader.ok()) return nullptr;
    return std::move(reader).value();
  }
  // The learner with one rollout and one reward worker double, to the end of its run: it exits
  // 0 and tells the workers to stop, which then exit 0 too.
  void run_to_the_end(const std::string& config) {
    auto learner = start_learner(config);
    auto rollout = start_worker(DICE_ROLLOUT_TEST_DOUBLE, "it/rollout/0");
    auto reward = start_worker(DICE_REWARD_TEST_DOUBLE, "it/reward/0");
    ASSERT_EQ(learner->wait_exit(kDeadline), 0) << learner_log();
    EXPECT_EQ(rollout->wait_exit(milliseconds(5000)), 0);
    EXPECT_EQ(reward->wait_exit(milliseconds(5000)), 0);
  }
  std::string learner_log() { return read_file(dir_ / "learner.log"); }
  // The learner with its checkpoints in `checkpoint_dir` (no floor: that disk's size is the
  // limit) and a worker double of each role, to the learner's exit; returns its exit code.
  int run_with_checkpoints_on(const std::string& config, const std::string& checkpoint_dir) {
    auto learner = start_learner(
        config, {"run.min_free_disk_mb=0", "learner.checkpoint.dir=" + checkpoint_dir});
    auto rollout = start_worker(DICE_ROLLOUT_TEST_DOUBLE, "it/rollout/0");
    auto reward = start_worker(DICE_REWARD_TEST_DOUBLE, "it/reward/0");
    return learner->wait_exit(kDeadline);
  }
  // Every step in `log` holds all its verdicts: 3 tasks x 2 samples.
  static void expect_every_step_whole(rewardlog::RewardLogReader& log) {
    auto steps = log.steps("it-run");
    ASSERT_TRUE(steps.ok()) << steps.status().to_string();
    ASSERT_FALSE(steps->empty());
    EXPECT_EQ((*steps)[0].get().getStep(), 0u);
    for (const auto& step : *steps) {
      rewardlog::CandidateFilter filter;
      filter.step = step.get().getStep();
      auto candidates = log.candidates("it-run", filter);
      ASSERT_TRUE(candidates.ok());
      EXPECT_EQ(candidates->size(), 6u) << "step " << *filter.step;
    }
  }
  // After an uninterrupted run of `config` (its log and checkpoints moved aside here): the same
  // run again, SIGKILLed once two of its `num_steps` steps are logged, then `--resume`d to the
  // end. Returns the resumed learner's log text.
  std::string run_killed_and_resumed(const std::string& config, int num_steps) {
    fs::rename(dir_ / "log", dir_ / "log-uninterrupted");
    fs::rename(dir_ / "checkpoints", dir_ / "checkpoints-uninterrupted");
    auto learner = start_learner(config);
    auto rollout = start_worker(DICE_ROLLOUT_TEST_DOUBLE, "it/rollout/0", /*sleep_ms=*/30);
    auto reward = start_worker(DICE_REWARD_TEST_DOUBLE, "it/reward/0");
    std::unique_ptr<rewardlog::RewardLogReader> log;
    EXPECT_TRUE(wait_for_steps(2, &log)) << learner_log();
    learner->kill();
    // A secondary catching up with a writer killed mid-write may fail once (RocksDB saw a half
    // written file); a reader opened after the kill sees a log at rest.
    log = open_log();
    EXPECT_NE(log, nullptr);
    if (log) {
      EXPECT_LT(log->steps("it-run")->size(), static_cast<std::size_t>(num_steps))
          << "killed too late to test anything";
    }
    auto resumed = start_learner(config, {"--resume"}, "learner-resumed.log");
    const int code = resumed->wait_exit(kDeadline);
    std::string text = read_file(dir_ / "learner-resumed.log");
    EXPECT_EQ(code, 0) << text;
    EXPECT_EQ(rollout->wait_exit(milliseconds(5000)), 0);
    EXPECT_EQ(reward->wait_exit(milliseconds(5000)), 0);
    EXPECT_NE(text.find("msg=\"run resumed\""), std::string::npos) << text;
    return text;
  }
  // The tests' tiny random policy in dir_/policy (written by a child process); "" on failure.
  std::string write_tiny_policy() {
    const std::string policy = (dir_ / "policy").string();
    ChildProcess writer(DICE_TINY_POLICY_WRITER, {policy}, (dir_ / "writer.log").string());
    return writer.wait_exit(kDeadline) == 0 ? policy : "";
  }
  fs::path worker_log_path(std::string id) const {
    std::replace(id.begin(), id.end(), '/', '_');
    return dir_ / (id + ".log");
  }

  // The body of the SIGKILL-and-resume tests below.
  void expect_resume_ends_as_uninterrupted();

  fs::path dir_;
  int port_ = 0;
  int metrics_port_ = 0;
  std::string phase_extra_;    // more YAML keys of write_config's rl phase ("    key: value\n")
  std::string learner_extra_;  // more YAML keys of its learner section ("  key: value\n")
};

TEST_F(LearnerIntegrationTest, RunsTwoStepsAndLogsEveryCandidateOnce) {
  ASSERT_NO_FATAL_FAILURE(run_to_the_end(write_config(2)));

  const std::string log_text = learner_log();
  EXPECT_NE(log_text.find("policy update: off (learner.update_policy false)"), std::string::npos)
      << log_text;
  EXPECT_NE(log_text.find("step 2/2 of phase e2e"), std::string::npos) << log_text;

  auto log = open_log();
  ASSERT_NE(log, nullptr);
  auto run = log->run("it-run");
  ASSERT_TRUE(run.ok()) << run.status().to_string();
  EXPECT_NE(std::string(run->get().getConfigYaml().cStr()).find("tasks_per_step"),
            std::string::npos);

  auto steps = log->steps("it-run");
  ASSERT_TRUE(steps.ok());
  ASSERT_EQ(steps->size(), 2u);
  for (const auto& step : *steps) {
    EXPECT_EQ(step.get().getNumTasks(), 3u);
    EXPECT_EQ(step.get().getNumCandidates(), 6u);
    EXPECT_EQ(step.get().getNumCorrect(), 3u);
    EXPECT_FLOAT_EQ(step.get().getMeanReward(), 0.5f);
    EXPECT_EQ(step.get().getNumGroupsDropped(), 0u);
    EXPECT_EQ(step.get().getPolicyVersion(), 0u);
    EXPECT_TRUE(std::isnan(step.get().getLoss()));  // no update: no loss, not a fake one
    EXPECT_TRUE(std::isnan(step.get().getClipFraction()));
    // Each group of two holds two different texts, one rewarded: every group mixed.
    EXPECT_EQ(step.get().getGroupSize(), 2u);
    EXPECT_EQ(step.get().getGroupsJudged(), 3u);
    EXPECT_EQ(step.get().getGroupsMixed(), 3u);
    EXPECT_EQ(step.get().getJudgedSamples(), 6u);
    EXPECT_EQ(step.get().getDistinctTexts(), 6u);
  }
  EXPECT_NE(log_text.find("groups_judged=3 groups_mixed=3 distinct_texts=2.00 group_size=2"),
            std::string::npos)
      << log_text;
  EXPECT_NE(log_text.find("kl=- clip_fraction=- grad_norm=-"), std::string::npos) << log_text;

  auto candidates = log->candidates("it-run");
  ASSERT_TRUE(candidates.ok());
  ASSERT_EQ(candidates->size(), 2u * 3u * 2u);
  std::set<std::string> keys;
  std::multiset<std::string> tasks_by_step[2];
  for (const auto& c : *candidates) {
    auto v = c.get().getVerdict();
    EXPECT_TRUE(keys.insert(c.key()).second) << "candidate counted twice: " << c.key();
    ASSERT_LT(v.getStep(), 2u);
    tasks_by_step[v.getStep()].insert(v.getTaskId().cStr());
    if (v.getSampleIndex() % 2 == 0) {
      EXPECT_EQ(v.getReward(), 1.0f);
      EXPECT_GT(c.get().getAdvantage(), 0.99f);
    } else {
      EXPECT_EQ(v.getReward(), 0.0f);
      EXPECT_LT(c.get().getAdvantage(), -0.99f);
    }
    EXPECT_NE(std::string(c.get().getResponseText().cStr()).find("sample"), std::string::npos);
    EXPECT_NE(std::string(c.get().getEvaluatedSource().cStr()).find("class ModelNew"),
              std::string::npos);
  }
  // One KernelRecord per distinct source hash the verdicts named.
  const std::string hash =
      candidates->front().get().getVerdict().getBuilds()[0].getSourceHash().cStr();
  auto kernel = log->kernel(hash);
  ASSERT_TRUE(kernel.ok()) << kernel.status().to_string();
  EXPECT_TRUE(kernel->get().getCompiled());
  EXPECT_EQ(std::string(kernel->get().getFirstSeenRunId().cStr()), "it-run");
  // Level order 1 then 2 (13 has level 3: left out), file order within a level, wrapping.
  EXPECT_EQ(tasks_by_step[0], (std::multiset<std::string>{"11", "11", "12", "12", "14", "14"}));
  EXPECT_EQ(tasks_by_step[1], (std::multiset<std::string>{"10", "10", "11", "11", "12", "12"}));

  auto metrics = log->metrics("it-run", std::string("reward/correct_rate"));
  ASSERT_TRUE(metrics.ok());
  ASSERT_EQ(metrics->size(), 2u);
  EXPECT_DOUBLE_EQ(metrics->front().get().getValue(), 0.5);
}

TEST_F(LearnerIntegrationTest, ConstantGroupsAreRefilledWithTheNextTasks) {
  // 21 and 22 get reward 0 for every sample (the reward double's marker), the others alternate.
  // Step 1 takes 21, 22, 23: two constant groups, each refilled with the next task (24, 25).
  // Step 2 takes 26, 21, 22 (the order wraps): two constant groups again, refilled with 23, 24.
  std::ofstream(dir_ / "refill_tasks.json") << R"([
      {"idx": 21, "level": "1", "pytorch_code": "import torch\n# constant reward"},
      {"idx": 22, "level": "1", "pytorch_code": "import torch\n# constant reward"},
      {"idx": 23, "level": "1", "pytorch_code": "import torch\n# twenty-three"},
      {"idx": 24, "level": "1", "pytorch_code": "import torch\n# twenty-four"},
      {"idx": 25, "level": "1", "pytorch_code": "import torch\n# twenty-five"},
      {"idx": 26, "level": "1", "pytorch_code": "import torch\n# twenty-six"}
    ])";
  phase_extra_ = "    refill_constant_groups: 2\n";
  ASSERT_NO_FATAL_FAILURE(run_to_the_end(write_config(2, "refill_tasks.json")));

  auto log = open_log();
  ASSERT_NE(log, nullptr);
  auto steps = log->steps("it-run");
  ASSERT_TRUE(steps.ok());
  ASSERT_EQ(steps->size(), 2u);
  for (const auto& step : *steps) {
    EXPECT_EQ(step.get().getNumTasks(), 5u);  // 3 + 2 refills
    EXPECT_EQ(step.get().getNumGroupsDropped(), 2u);
    EXPECT_EQ(step.get().getNumCandidates(), 10u);
    // The dropped groups count among the judged ones, so refills do not hide them.
    EXPECT_EQ(step.get().getGroupsJudged(), 5u);
    EXPECT_EQ(step.get().getGroupsMixed(), 3u);
    EXPECT_EQ(step.get().getDroppedGroupsJudged(), 2u);
    EXPECT_EQ(step.get().getDroppedDistinctTexts(), 4u);
  }
  auto candidates = log->candidates("it-run");
  ASSERT_TRUE(candidates.ok());
  std::multiset<std::string> tasks_by_step[2];
  for (const auto& c : *candidates) {
    auto v = c.get().getVerdict();
    ASSERT_LT(v.getStep(), 2u);
    tasks_by_step[v.getStep()].insert(v.getTaskId().cStr());
  }
  const auto twice = [](std::initializer_list<const char*> ids) {
    std::multiset<std::string> out;
    for (const char* id : ids) out.insert({id, id});
    return out;
  };
  EXPECT_EQ(tasks_by_step[0], twice({"21", "22", "23", "24", "25"}));
  EXPECT_EQ(tasks_by_step[1], twice({"26", "21", "22", "23", "24"}));
  EXPECT_NE(learner_log().find("refill_constant_groups=2"), std::string::npos) << learner_log();
}

// A pass-rate band primed by the sampled evaluation just before it (the same weights): the rl
// phase's first step takes the tasks whose evaluated groups were mixed (21, 23, 24: the reward
// double's even samples are correct) and passes over the hopeless ones (20, 22: "# constant
// reward"), where an unprimed band would walk 20, 21, 22 first. A greedy evaluation primes
// nothing: one answer a task is no pass rate.
TEST_F(LearnerIntegrationTest, ABandPrimedByTheEvaluationBeforeItSkipsHopelessTasks) {
  std::ofstream(dir_ / "band_tasks.json") << R"([
      {"idx": 20, "level": "1", "pytorch_code": "import torch\n# constant reward"},
      {"idx": 21, "level": "1", "pytorch_code": "import torch\n# twenty-one"},
      {"idx": 22, "level": "1", "pytorch_code": "import torch\n# constant reward"},
      {"idx": 23, "level": "1", "pytorch_code": "import torch\n# twenty-three"},
      {"idx": 24, "level": "1", "pytorch_code": "import torch\n# twenty-four"}
    ])";
  phase_extra_ = "    pass_rate_band: {}\n";
  const std::string evaluations =
      "  - {name: look-greedy, type: eval, kind: end_to_end, task_files: [band_tasks.json]}\n"
      "  - {name: look, type: eval, kind: end_to_end, decoding: sample, samples_per_task: 2, "
      "task_files: [band_tasks.json]}\n";
  ASSERT_NO_FATAL_FAILURE(run_to_the_end(write_config(1, "band_tasks.json", 20, "", evaluations)));
  EXPECT_NE(learner_log().find("pass-rate band primed by this policy's sampled evaluation"),
            std::string::npos)
      << learner_log();
  EXPECT_NE(learner_log().find("tasks=5 of=5"), std::string::npos) << learner_log();

  auto log = open_log();
  ASSERT_NE(log, nullptr);
  auto candidates = log->candidates("it-run");
  ASSERT_TRUE(candidates.ok());
  std::set<std::string> first_rl_step;
  for (const auto& c : *candidates) {
    auto v = c.get().getVerdict();
    if (v.getStep() == 2) first_rl_step.insert(v.getTaskId().cStr());
  }
  EXPECT_EQ(first_rl_step, (std::set<std::string>{"21", "23", "24"}));
}

// An rl phase's time budget (max_minutes) ends it after the steps already started, and the
// phase after it still runs: a run that must fit a budget keeps its evaluation.
TEST_F(LearnerIntegrationTest, ATimeBudgetEndsAnRlPhaseAndThePhasesAfterItRun) {
  phase_extra_ =
      "    max_minutes: 0.0001\n"
      "  - {name: look, type: eval, kind: end_to_end, task_files: [tasks.json]}\n";
  ASSERT_NO_FATAL_FAILURE(run_to_the_end(write_config(5)));
  const std::string log_text = learner_log();
  EXPECT_NE(log_text.find("phase time budget spent: no new steps"), std::string::npos) << log_text;

  auto log = open_log();
  ASSERT_NE(log, nullptr);
  auto steps = log->steps("it-run");
  ASSERT_TRUE(steps.ok()) << steps.status().to_string();
  int rl_steps = 0, eval_steps = 0;
  for (const auto& step : *steps) {
    const std::string phase = step.get().getPhaseName().cStr();
    rl_steps += phase == "e2e";
    eval_steps += phase == "look";
  }
  EXPECT_GE(rl_steps, 1);
  EXPECT_LT(rl_steps, 5) << "the budget of 6 ms let every planned step run";
  EXPECT_NE(log_text.find("steps=" + std::to_string(rl_steps) + " planned=5"), std::string::npos)
      << log_text;
  EXPECT_EQ(eval_steps, 1) << "the eval phase after the budgeted phase ran";
}

// The mixed scheduler through the real learner: level 1 (11, 12, 14) alone first; its 6
// candidates are half correct (the reward double: even samples), which meets threshold 0.5 over
// a window of 6, so level 2 (10) opens and step 2 draws from both levels in turn. The schedule is
// in the reward log (schedule/e2e/...) and the promotion in the learner's log.
TEST_F(LearnerIntegrationTest, MixedSchedulingOpensTheNextLevelAndLogsTheSchedule) {
  phase_extra_ = "    scheduling: mixed\n    promotion: {threshold: 0.5, window: 6}\n";
  ASSERT_NO_FATAL_FAILURE(run_to_the_end(write_config(2)));

  auto log = open_log();
  ASSERT_NE(log, nullptr);
  auto candidates = log->candidates("it-run");
  ASSERT_TRUE(candidates.ok());
  std::set<std::string> tasks_by_step[2];
  for (const auto& c : *candidates) {
    auto v = c.get().getVerdict();
    ASSERT_LT(v.getStep(), 2u);
    tasks_by_step[v.getStep()].insert(v.getTaskId().cStr());
  }
  EXPECT_EQ(tasks_by_step[0], (std::set<std::string>{"11", "12", "14"}));
  EXPECT_EQ(tasks_by_step[1], (std::set<std::string>{"11", "10", "12"}));
  auto open_levels = log->metrics("it-run", std::string("schedule/e2e/open_levels"));
  ASSERT_TRUE(open_levels.ok());
  ASSERT_EQ(open_levels->size(), 2u);
  EXPECT_EQ((*open_levels)[0].get().getValue(), 2.0);  // after step 1: level 2 opened
  auto rolling = log->metrics("it-run", std::string("schedule/e2e/level_1/rolling_correct"));
  ASSERT_TRUE(rolling.ok());
  ASSERT_FALSE(rolling->empty());
  EXPECT_DOUBLE_EQ((*rolling)[0].get().getValue(), 0.5);
  EXPECT_NE(learner_log().find("level promoted"), std::string::npos) << learner_log();
  EXPECT_NE(learner_log().find("scheduling=mixed"), std::string::npos) << learner_log();
}

// Below the threshold level 2 stays closed: step 2 takes level 1 again, where sequential
// select would have moved on to 10.
TEST_F(LearnerIntegrationTest, MixedSchedulingKeepsALevelClosedBelowTheThreshold) {
  phase_extra_ = "    scheduling: mixed\n    promotion: {threshold: 0.6, window: 6}\n";
  ASSERT_NO_FATAL_FAILURE(run_to_the_end(write_config(2)));
  auto log = open_log();
  ASSERT_NE(log, nullptr);
  auto candidates = log->candidates("it-run");
  ASSERT_TRUE(candidates.ok());
  std::set<std::string> second_step;
  for (const auto& c : *candidates) {
    if (c.get().getVerdict().getStep() == 1) second_step.insert(c.get().getVerdict().getTaskId());
  }
  EXPECT_EQ(second_step, (std::set<std::string>{"11", "12", "14"}));
  auto open_levels = log->metrics("it-run", std::string("schedule/e2e/open_levels"));
  ASSERT_TRUE(open_levels.ok());
  ASSERT_EQ(open_levels->size(), 2u);
  EXPECT_EQ((*open_levels)[1].get().getValue(), 1.0);
  EXPECT_EQ(learner_log().find("level promoted"), std::string::npos) << learner_log();
}

TEST_F(LearnerIntegrationTest, PolicyUpdateTrainsCheckpointsAndPushesWeights) {
  const std::string policy = write_tiny_policy();
  ASSERT_FALSE(policy.empty()) << read_file(dir_ / "writer.log");

  ASSERT_NO_FATAL_FAILURE(run_to_the_end(write_config(3, "tasks.json", 20, policy)));
  const std::string log_text = learner_log();
  EXPECT_NE(log_text.find("policy update: TraceRL"), std::string::npos) << log_text;

  // Every step trained (rewards alternate within each group, so no group is constant).
  auto log = open_log();
  ASSERT_NE(log, nullptr);
  auto steps = log->steps("it-run");
  ASSERT_TRUE(steps.ok()) << steps.status().to_string();
  ASSERT_EQ(steps->size(), 3u);
  for (std::size_t i = 0; i < steps->size(); ++i) {
    auto step = (*steps)[i].get();
    EXPECT_EQ(step.getPolicyVersion(), i) << "step " << i << " sampled by the previous update";
    EXPECT_TRUE(std::isfinite(step.getLoss())) << "step " << i;
    EXPECT_TRUE(std::isfinite(step.getKlDivergence()));
    EXPECT_GT(step.getGradNorm(), 0.0f);
    EXPECT_GE(step.getClipFraction(), 0.0f);  // not NaN: the update ran
    EXPECT_LE(step.getClipFraction(), 1.0f);
  }
  EXPECT_EQ(log_text.find("kl=- "), std::string::npos) << log_text;
  EXPECT_NE(log_text.find(" clip_fraction="), std::string::npos) << log_text;
  // The next step's candidates came from the pushed version (the test double claims the
  // requested minPolicyVersion).
  auto candidates = log->candidates("it-run");
  ASSERT_TRUE(candidates.ok());
  for (const auto& c : *candidates) {
    auto v = c.get().getVerdict();
    EXPECT_EQ(v.getPolicyVersion(), v.getStep());
  }
  auto losses = log->metrics("it-run", std::string("learner/loss"));
  ASSERT_TRUE(losses.ok());
  EXPECT_EQ(losses->size(), 3u);

  // Checkpoints: v2 (the interval) and v3 (the newest) remain, v1 was pruned; each is a full
  // Hugging Face folder, announced to the rollout worker.
  const fs::path checkpoints = dir_ / "checkpoints" / "it-run";
  EXPECT_FALSE(fs::exists(checkpoints / "policy-v1"));
  for (const char* v : {"policy-v2", "policy-v3"}) {
    EXPECT_TRUE(fs::exists(checkpoints / v / "config.json")) << v;
    EXPECT_TRUE(fs::exists(checkpoints / v / "model.safetensors")) << v;
  }
  const std::string rollout_log = read_file(worker_log_path("it/rollout/0"));
  EXPECT_NE(rollout_log.find("weights update policy_version=3 dir="), std::string::npos)
      << rollout_log;
  EXPECT_NE(log_text.find("weights pushed"), std::string::npos);
}

// learner.min_mixed_samples 12: each step has 6 samples of groups with mixed rewards (3 tasks x
// 2, rewards alternating), so step 0 runs no update and carries its samples, step 1 trains on
// 12 (step 0's and its own, all of version 0: nothing ran in between), and step 2, the phase's
// last, trains on its 6 alone.
TEST_F(LearnerIntegrationTest, TooFewMixedSamplesWaitForTheNextStepsUpdate) {
  const std::string policy = write_tiny_policy();
  ASSERT_FALSE(policy.empty()) << read_file(dir_ / "writer.log");
  learner_extra_ = "  min_mixed_samples: 12\n";
  ASSERT_NO_FATAL_FAILURE(run_to_the_end(write_config(3, "tasks.json", 20, policy)));
  auto log = open_log();
  ASSERT_NE(log, nullptr);
  auto steps = log->steps("it-run");
  ASSERT_TRUE(steps.ok()) << steps.status().to_string();
  ASSERT_EQ(steps->size(), 3u);
  const std::vector<std::uint64_t> sampled_by = {0, 0, 1};
  for (std::size_t i = 0; i < 3; ++i) {
    EXPECT_EQ((*steps)[i].get().getPolicyVersion(), sampled_by[i]) << "step " << i;
  }
  auto carried = log->metrics("it-run", std::string("learner/carried_samples"));
  ASSERT_TRUE(carried.ok());
  ASSERT_EQ(carried->size(), 3u);
  const std::vector<double> waiting = {6, 0, 0};
  for (std::size_t i = 0; i < 3; ++i) {
    EXPECT_EQ((*carried)[i].get().getValue(), waiting[i]) << "step " << i;
  }
  auto losses = log->metrics("it-run", std::string("learner/loss"));
  ASSERT_TRUE(losses.ok());
  EXPECT_EQ(losses->size(), 2u);  // steps 1 and 2 updated
  const std::string text = learner_log();
  EXPECT_NE(text.find("carried_in=6 carried_samples=0"), std::string::npos) << text;
  EXPECT_NE(text.find("carried_in=0 carried_samples=6"), std::string::npos) << text;
}

// The asynchronous mode, one step ahead: steps 0 and 1 are asked for before the first update,
// so step 1 samples with version 0 and trains from version 1; step 2 is asked for after that
// update, and so on. Every step trains, each says how stale its candidates were, and decoupled
// PPO's importance weights show in the metrics.
TEST_F(LearnerIntegrationTest, AsynchronousStepsRunOneAheadAndSayHowStaleTheyWere) {
  const std::string policy = write_tiny_policy();
  ASSERT_FALSE(policy.empty()) << read_file(dir_ / "writer.log");
  learner_extra_ = "  async:\n    max_ahead: 1\n";
  ASSERT_NO_FATAL_FAILURE(run_to_the_end(write_config(4, "tasks.json", 20, policy)));
  const std::string log_text = learner_log();

  auto log = open_log();
  ASSERT_NE(log, nullptr);
  auto steps = log->steps("it-run");
  ASSERT_TRUE(steps.ok()) << steps.status().to_string();
  ASSERT_EQ(steps->size(), 4u) << log_text;
  for (std::size_t i = 0; i < steps->size(); ++i) {
    auto step = (*steps)[i].get();
    EXPECT_EQ(step.getStep(), i);
    EXPECT_EQ(step.getNumCandidates(), 6u) << "step " << i;
    EXPECT_TRUE(std::isfinite(step.getLoss())) << "step " << i << " trained";
    EXPECT_EQ(step.getRolloutAhead(), 1u);
    // Asked for with the weights before the update in front of it: version i - 1 (0 for step 0).
    EXPECT_EQ(step.getPolicyVersion(), i == 0 ? 0u : i - 1) << "step " << i;
    EXPECT_EQ(step.getStalenessMax(), i == 0 ? 0u : 1u) << "step " << i;
    EXPECT_FLOAT_EQ(step.getStalenessMean(), i == 0 ? 0.0f : 1.0f) << "step " << i;
  }
  auto candidates = log->candidates("it-run");
  ASSERT_TRUE(candidates.ok());
  EXPECT_EQ(candidates->size(), 4u * 3u * 2u);
  std::set<std::string> keys;
  for (const auto& c : *candidates) EXPECT_TRUE(keys.insert(c.key()).second) << c.key();
  auto weights = log->metrics("it-run", std::string("learner/importance_mean"));
  ASSERT_TRUE(weights.ok());
  ASSERT_EQ(weights->size(), 4u);
  for (const auto& w : *weights) {
    EXPECT_GT(w.get().getValue(), 0.0);
    EXPECT_LE(w.get().getValue(), 1.0);  // importance_cap 1
  }
  EXPECT_NE(log_text.find("step 4/4 of phase e2e"), std::string::npos) << log_text;
  EXPECT_NE(log_text.find("staleness_max=1"), std::string::npos) << log_text;
  EXPECT_NE(log_text.find("ahead=1"), std::string::npos) << log_text;
  const std::string rollout_log = read_file(worker_log_path("it/rollout/0"));
  EXPECT_NE(rollout_log.find("weights update policy_version=4 dir="), std::string::npos)
      << rollout_log;
}

// stale: drop, two steps ahead, max_staleness 1: steps 0, 1 and 2 are all asked for with
// version 0, so step 2 (trained from version 2) is two versions old and dropped whole: no
// update; step 3, asked for after the first update, trains again.
TEST_F(LearnerIntegrationTest, TheDropModeDropsSamplesOlderThanMaxStaleness) {
  const std::string policy = write_tiny_policy();
  ASSERT_FALSE(policy.empty()) << read_file(dir_ / "writer.log");
  learner_extra_ = "  max_staleness: 1\n  async:\n    max_ahead: 2\n    stale: drop\n";
  ASSERT_NO_FATAL_FAILURE(run_to_the_end(write_config(4, "tasks.json", 20, policy)));

  auto log = open_log();
  ASSERT_NE(log, nullptr);
  auto steps = log->steps("it-run");
  ASSERT_TRUE(steps.ok());
  ASSERT_EQ(steps->size(), 4u) << learner_log();
  const bool trained[] = {true, true, false, true};
  const std::uint32_t oldest[] = {0, 1, 2, 1};
  for (std::size_t i = 0; i < 4; ++i) {
    auto step = (*steps)[i].get();
    EXPECT_EQ(std::isfinite(step.getLoss()), trained[i]) << "step " << i;
    EXPECT_EQ(step.getStalenessMax(), oldest[i]) << "step " << i;
  }
  auto stale = log->metrics("it-run", std::string("learner/candidates_stale"));
  ASSERT_TRUE(stale.ok());
  ASSERT_EQ(stale->size(), 4u);
  EXPECT_EQ((*stale)[2].get().getValue(), 6.0);
  EXPECT_EQ((*stale)[3].get().getValue(), 0.0);
  auto versions = log->metrics("it-run", std::string("learner/policy_version"));
  ASSERT_TRUE(versions.ok());
  ASSERT_FALSE(versions->empty());
  EXPECT_EQ(versions->back().get().getValue(), 3.0);  // three updates
}

// The tasks of each step of it-run in the log at `log_dir`: step -> sorted task ids.
std::map<std::uint64_t, std::multiset<std::string>> tasks_by_step(rewardlog::RewardLogReader& log) {
  std::map<std::uint64_t, std::multiset<std::string>> out;
  auto candidates = log.candidates("it-run");
  if (!candidates.ok()) return out;
  for (const auto& c : *candidates) {
    out[c.get().getVerdict().getStep()].insert(c.get().getVerdict().getTaskId().cStr());
  }
  return out;
}

// SIGKILL in the asynchronous mode: the resume point holds the schedule from before the step
// ahead drew its tasks, so the resumed run asks for that step's tasks again and every step holds
// the tasks an uninterrupted run's does (the weights may differ: which version samples a step
// ahead depends on timing).
TEST_F(LearnerIntegrationTest, AnAsynchronousRunResumedAfterSigkillTakesTheSameTasksEachStep) {
  const std::string policy = write_tiny_policy();
  ASSERT_FALSE(policy.empty()) << read_file(dir_ / "writer.log");
  const int num_steps = 6;
  learner_extra_ = "  async:\n    max_ahead: 1\n";
  const std::string config = write_config(num_steps, "tasks.json", 20, policy);
  ASSERT_NO_FATAL_FAILURE(run_to_the_end(config));
  std::map<std::uint64_t, std::multiset<std::string>> uninterrupted;
  {
    auto log = open_log();
    ASSERT_NE(log, nullptr);
    uninterrupted = tasks_by_step(*log);
  }
  ASSERT_EQ(uninterrupted.size(), static_cast<std::size_t>(num_steps));
  const std::string resumed_log = run_killed_and_resumed(config, num_steps);
  ASSERT_FALSE(HasFailure());

  auto log = open_log();
  ASSERT_NE(log, nullptr);
  auto steps = log->steps("it-run");
  ASSERT_TRUE(steps.ok());
  ASSERT_EQ(steps->size(), static_cast<std::size_t>(num_steps)) << resumed_log;
  for (std::size_t i = 0; i < steps->size(); ++i) {
    EXPECT_EQ((*steps)[i].get().getStep(), i);
    EXPECT_EQ((*steps)[i].get().getNumCandidates(), 6u) << "step " << i;
  }
  auto candidates = log->candidates("it-run");
  ASSERT_TRUE(candidates.ok());
  EXPECT_EQ(candidates->size(), static_cast<std::size_t>(num_steps) * 6u);
  EXPECT_EQ(tasks_by_step(*log), uninterrupted) << resumed_log;
}

// Each phase ends in a checkpoint of its own, phase-<name>: also a phase in which no update ran
// (an eval phase here), and retention, which deletes old policy-v<N> folders during the next
// phase, never deletes one.
TEST_F(LearnerIntegrationTest, EveryPhaseEndsInACheckpointThatRetentionKeeps) {
  const std::string policy = write_tiny_policy();
  ASSERT_FALSE(policy.empty()) << read_file(dir_ / "writer.log");
  const std::string eval_phase =
      "  - {name: look, type: eval, kind: end_to_end, task_files: [tasks.json]}\n";
  ASSERT_NO_FATAL_FAILURE(run_to_the_end(write_config(3, "tasks.json", 20, policy, eval_phase)));
  const std::string log_text = learner_log();
  EXPECT_NE(log_text.find("msg=\"phase checkpoint written\" phase=look"), std::string::npos)
      << log_text;

  auto log = open_log();
  ASSERT_NE(log, nullptr);
  auto steps = log->steps("it-run");
  ASSERT_TRUE(steps.ok()) << steps.status().to_string();
  ASSERT_GE(steps->size(), 4u) << log_text;
  const auto first = (*steps)[0].get();
  EXPECT_EQ(std::string(first.getPhaseName().cStr()), "look");
  EXPECT_TRUE(first.getEvaluation());
  EXPECT_EQ(first.getPolicyVersion(), 0u) << "an eval phase updates nothing";

  const fs::path checkpoints = dir_ / "checkpoints" / "it-run";
  for (const char* phase : {"phase-look", "phase-e2e"}) {
    EXPECT_TRUE(fs::exists(checkpoints / phase / "config.json")) << phase;
    EXPECT_TRUE(fs::exists(checkpoints / phase / "model.safetensors")) << phase;
  }
  EXPECT_FALSE(fs::exists(checkpoints / "policy-v1")) << "retention ran";
}

TEST_F(LearnerIntegrationTest, SftTrainsOnTheDataAndWritesCheckpoints) {
  const std::string policy = write_tiny_policy();
  ASSERT_FALSE(policy.empty()) << read_file(dir_ / "writer.log");
  std::ofstream(dir_ / "sft.json") << R"([
    {"id": "a", "prompt_ids": [1, 2, 3, 4, 5], "response_ids": [10, 11, 12, 13, 14, 15]},
    {"id": "b", "prompt_ids": [6, 7, 8], "response_ids": [20, 21, 22, 23, 24]},
    {"id": "c", "prompt_ids": [9], "response_ids": [30, 31, 32, 33, 34, 35, 36, 37]},
    {"id": "long", "prompt_ids": [1, 2, 3, 4, 5, 6, 7, 8], "response_ids": [1, 2, 3, 4, 5, 6]}
  ])";
  write_config(1);  // the curriculum file every config names (unused by SFT)
  std::ofstream(dir_ / "sft.yaml")
      << "run:\n  id: sft-run\n  reward_log_path: log\n"
      << "curriculum_file: curriculum.yaml\n"
      << "learner:\n  mode: sft\n  dtype: fp32\n  seed: 3\n"
      << "  checkpoint:\n    dir: checkpoints\n    interval_steps: 2\n"
      << "  sft:\n    data_file: sft.json\n    epochs: 2\n"
      << "    batch_size: 2\n    max_length: 12\n    lr: 1e-3\n"
      << "rollout:\n  model_path: " << policy << "\n"
      << "cluster:\n  learner:\n    metrics_port: " << metrics_port_ << "\n";
  auto learner = start_learner((dir_ / "sft.yaml").string());
  ASSERT_EQ(learner->wait_exit(kDeadline), 0) << learner_log();
  const std::string log_text = learner_log();
  // 3 samples fit 12 tokens ("long" has 14): 2 steps per epoch, 4 in all.
  EXPECT_NE(log_text.find("samples=3 too_long=1"), std::string::npos) << log_text;
  EXPECT_NE(log_text.find("SFT step 4/4"), std::string::npos) << log_text;
  for (const char* step : {"sft-step-2", "sft-step-4"}) {
    EXPECT_TRUE(fs::exists(dir_ / "checkpoints" / "sft-run" / step / "model.safetensors")) << step;
  }
  auto log = open_log();
  ASSERT_NE(log, nullptr);
  auto losses = log->metrics("sft-run", std::string("sft/loss"));
  ASSERT_TRUE(losses.ok()) << losses.status().to_string();
  ASSERT_EQ(losses->size(), 4u);
  for (const auto& m : *losses) EXPECT_TRUE(std::isfinite(m.get().getValue()));
  auto lr = log->metrics("sft-run", std::string("sft/lr"));
  ASSERT_TRUE(lr.ok());
  EXPECT_EQ(lr->size(), 4u);
}

// A disk that fills during a run. The checkpoints' folder is a tmpfs sized from an uninterrupted
// run's files: room for the first step's checkpoint and resume folder and the second step's
// checkpoint, and half a resume folder more. The second step's resume folder is refused before
// its first byte, the learner ends with the reason, and the first step's resume folder, both
// checkpoints and the reward log's records stay. Needs root for the tmpfs; skipped without.
TEST_F(LearnerIntegrationTest, AFullDiskEndsTheRunWithTheReasonAndKeepsTheLastResumeFolder) {
  const std::string policy = write_tiny_policy();
  ASSERT_FALSE(policy.empty()) << read_file(dir_ / "writer.log");
  const std::string config = write_config(2, "tasks.json", 20, policy);
  ASSERT_NO_FATAL_FAILURE(run_to_the_end(config));
  const fs::path measured = dir_ / "checkpoints" / "it-run";
  const std::uint64_t checkpoint = tree_bytes((measured / "policy-v1").string());
  const std::uint64_t resume = tree_bytes((measured / "resume").string());
  ASSERT_GT(checkpoint, 0u);
  ASSERT_GT(resume, checkpoint);
  ASSERT_TRUE(remove_tree(dir_ / "log").ok());  // the same run id again, from the start
  ASSERT_TRUE(remove_tree(dir_ / "checkpoints").ok());

  // 64 KiB for the files' last pages: well under half a resume folder (~5 checkpoints' worth).
  const std::uint64_t room = 2 * checkpoint + resume + resume / 2 + 64 * 1024;
  testing_util::SmallTmpfs disk(static_cast<int>(room / 1024));
  if (!disk.mounted()) GTEST_SKIP() << disk.skip_reason();
  EXPECT_EQ(run_with_checkpoints_on(config, disk.path()), 3)
      << "kExitNoDiskSpace: not restarted" << learner_log();
  const std::string log_text = learner_log();
  EXPECT_NE(log_text.find("resume folder after step 1: " + disk.path() +
                          "/it-run/resume.partial: not enough free disk space for the resume "
                          "folder: it needs "),
            std::string::npos)
      << log_text;

  const fs::path kept = fs::path(disk.path()) / "it-run";
  EXPECT_FALSE(fs::exists(kept / "resume.partial"));
  EXPECT_TRUE(fs::exists(kept / "policy-v1" / "model.safetensors"));
  EXPECT_TRUE(fs::exists(kept / "policy-v2" / "model.safetensors"));
  const std::string position = read_file(kept / "resume" / "position.json");
  EXPECT_TRUE(std::regex_search(position, std::regex("\"next_step\": *1[,} \n]"))) << position;
  EXPECT_TRUE(fs::exists(kept / "resume" / "optimizer.pt"));
  auto log = open_log();
  ASSERT_NE(log, nullptr);
  auto steps = log->steps("it-run");
  ASSERT_TRUE(steps.ok()) << steps.status().to_string();
  ASSERT_FALSE(steps->empty());
  EXPECT_EQ((*steps)[0].get().getStep(), 0u);
  auto candidates = log->candidates("it-run");
  ASSERT_TRUE(candidates.ok());
  EXPECT_GE(candidates->size(), 6u);  // step 0's 3 tasks x 2 samples
}

// The first resume folder, on a disk with room for its weights and not its optimizer state:
// optimizer.pt (the fp32 masters and AdamW's moments, 12 bytes a parameter) is checked before
// LibTorch's writer starts, so the learner ends with exit 3 naming the file and the bytes, and
// the policy checkpoint written before stays. The tmpfs is sized from an uninterrupted run: the
// first checkpoint, the resume folder's weights and half its optimizer state. Needs root for the
// tmpfs; skipped without.
TEST_F(LearnerIntegrationTest, AFirstResumeFolderWhoseOptimizerStateWouldNotFitIsRefused) {
  const std::string policy = write_tiny_policy();
  ASSERT_FALSE(policy.empty()) << read_file(dir_ / "writer.log");
  const std::string config = write_config(2, "tasks.json", 20, policy);
  ASSERT_NO_FATAL_FAILURE(run_to_the_end(config));
  const fs::path measured = dir_ / "checkpoints" / "it-run";
  const std::uint64_t checkpoint = tree_bytes((measured / "policy-v1").string());
  const std::uint64_t optimizer = tree_bytes((measured / "resume" / "optimizer.pt").string());
  ASSERT_GT(checkpoint, 0u);
  ASSERT_GT(optimizer, checkpoint);
  ASSERT_TRUE(remove_tree(dir_ / "log").ok());
  ASSERT_TRUE(remove_tree(dir_ / "checkpoints").ok());

  const std::uint64_t room = 2 * checkpoint + optimizer / 2 + 64 * 1024;
  testing_util::SmallTmpfs disk(static_cast<int>(room / 1024));
  if (!disk.mounted()) GTEST_SKIP() << disk.skip_reason();
  EXPECT_EQ(run_with_checkpoints_on(config, disk.path()), 3)
      << "kExitNoDiskSpace: not restarted" << learner_log();
  const std::string log_text = learner_log();
  const std::string partial = disk.path() + "/it-run/resume.partial";
  EXPECT_NE(log_text.find(partial + ": not enough free disk space for the optimizer state " +
                          partial + "/optimizer.pt: it needs "),
            std::string::npos)
      << log_text;
  const fs::path kept = fs::path(disk.path()) / "it-run";
  EXPECT_FALSE(fs::exists(kept / "resume.partial"));
  EXPECT_TRUE(fs::exists(kept / "policy-v1" / "model.safetensors"));
}

// Bytes the regular files under `dir` take on a tmpfs: whole pages of 4 KiB.
std::uint64_t tmpfs_bytes(const fs::path& dir) {
  constexpr std::uint64_t kPage = 4096;
  std::uint64_t bytes = 0;
  for (const auto& entry : fs::recursive_directory_iterator(dir)) {
    if (entry.is_regular_file()) bytes += (entry.file_size() + kPage - 1) / kPage * kPage;
  }
  return bytes;
}

// The parameters of a float32 safetensors file: its data's bytes (all but the 8-byte header
// length and the header) over 4.
std::uint64_t float32_parameters(const fs::path& safetensors) {
  std::ifstream in(safetensors, std::ios::binary);
  std::uint64_t header = 0;
  in.read(reinterpret_cast<char*>(&header), sizeof(header));  // little-endian, as x86 and ARM
  return (fs::file_size(safetensors) - sizeof(header) - header) / 4;
}

// A disk that fills during the optimizer state's write, past the check before it: the tmpfs
// holds the first checkpoint, the resume folder's weights and room for 12 bytes a parameter (what
// the check asks for optimizer.pt) but not the whole archive (LibTorch's records, names and
// padding come on top). LibTorch's own file writer would throw from its destructor there and
// abort the learner (exit 134, a restart loop under dice-cluster); it ends with exit 3
// (kExitNoDiskSpace) and an error naming the file, the reward log keeps step 0's verdicts, the
// checkpoint stays and no partial folder or temporary is left. Needs root for the tmpfs.
TEST_F(LearnerIntegrationTest, ADiskThatFillsDuringTheOptimizerStateEndsTheRunNamingTheFile) {
  const std::string policy = write_tiny_policy();
  ASSERT_FALSE(policy.empty()) << read_file(dir_ / "writer.log");
  const std::string config = write_config(2, "tasks.json", 20, policy);
  ASSERT_NO_FATAL_FAILURE(run_to_the_end(config));
  const fs::path measured = dir_ / "checkpoints" / "it-run";
  const std::uint64_t checkpoint = tmpfs_bytes(measured / "policy-v1");
  const std::uint64_t weights = tmpfs_bytes(measured / "resume" / "model");
  const std::uint64_t optimizer = fs::file_size(measured / "resume" / "optimizer.pt");
  const std::uint64_t checked =
      12 * float32_parameters(measured / "resume" / "model" / "model.safetensors");
  // The room for optimizer.pt: whole pages, at least the check's bytes, short of the archive.
  const std::uint64_t room = (checked + optimizer) / 2 / 4096 * 4096;
  ASSERT_GE(room, checked);
  ASSERT_LT(room + 4096, optimizer) << "the archive is not enough larger than the check's bytes";
  ASSERT_TRUE(remove_tree(dir_ / "log").ok());
  ASSERT_TRUE(remove_tree(dir_ / "checkpoints").ok());

  testing_util::SmallTmpfs disk(static_cast<int>((checkpoint + weights + room) / 1024));
  if (!disk.mounted()) GTEST_SKIP() << disk.skip_reason();
  EXPECT_EQ(run_with_checkpoints_on(config, disk.path()), 3)
      << "kExitNoDiskSpace: not restarted" << learner_log();
  const std::string log_text = learner_log();
  const std::string file = disk.path() + "/it-run/resume.partial/optimizer.pt";
  EXPECT_NE(log_text.find(file + ": optimizer state of " + std::to_string(optimizer) +
                          " bytes: the write at byte "),
            std::string::npos)
      << log_text;
  EXPECT_NE(log_text.find("failed: " + std::string(std::strerror(ENOSPC))), std::string::npos)
      << log_text;

  const fs::path kept = fs::path(disk.path()) / "it-run";
  EXPECT_FALSE(fs::exists(kept / "resume.partial")) << "its space is given back";
  EXPECT_TRUE(fs::exists(kept / "policy-v1" / "model.safetensors"));
  auto log = open_log();
  ASSERT_NE(log, nullptr);
  expect_every_step_whole(*log);
}

// A disk that fills under the reward log mid-run (a tmpfs, filled below the log's floor once a
// step is logged): the next batch of verdicts is refused before RocksDB sees it, the learner ends
// with exit 3 (kExitNoDiskSpace: not restarted) naming the folder and the bytes, every step
// logged before keeps its StepRecord and all its verdicts, and with the space freed the run
// resumes to its end with each step logged once. Needs root for the tmpfs; skipped without.
TEST_F(LearnerIntegrationTest, ARewardLogOnAFullDiskEndsTheRunAndKeepsTheVerdictsWritten) {
  testing_util::SmallTmpfs disk(8192);
  if (!disk.mounted()) GTEST_SKIP() << disk.skip_reason();
  constexpr int kSteps = 4;
  const std::string config = write_config(kSteps);
  const std::string log_path = disk.sub("log");
  // The log keeps a quarter of run.min_free_disk_mb free: 1 MiB.
  const std::vector<std::string> overrides = {"run.min_free_disk_mb=4",
                                              "run.reward_log_path=" + log_path};
  auto learner = start_learner(config, overrides);
  auto rollout = start_worker(DICE_ROLLOUT_TEST_DOUBLE, "it/rollout/0", /*sleep_ms=*/100);
  auto reward = start_worker(DICE_REWARD_TEST_DOUBLE, "it/reward/0");
  std::unique_ptr<rewardlog::RewardLogReader> log;
  ASSERT_TRUE(wait_for_steps(1, &log, log_path)) << learner_log();
  auto free_now = free_disk_bytes(disk.path());
  ASSERT_TRUE(free_now.ok()) << free_now.status().to_string();
  ASSERT_GT(*free_now, kBytesPerMiB);
  {
    std::ofstream filler(disk.sub("filler"), std::ios::binary);
    filler << std::string(*free_now - kBytesPerMiB + 64 * 1024, 'f');  // 64 KiB below the floor
  }

  EXPECT_EQ(learner->wait_exit(kDeadline), 3) << "kExitNoDiskSpace: not restarted" << learner_log();
  const std::string log_text = learner_log();
  EXPECT_NE(log_text.find(log_path + ": not enough free disk space for a batch of "),
            std::string::npos)
      << log_text;
  EXPECT_NE(log_text.find("a quarter of run.min_free_disk_mb keeps 1.0 MiB (1048576 bytes) free"),
            std::string::npos)
      << log_text;
  rollout.reset();
  reward.reset();
  ASSERT_TRUE(log->catch_up().ok());
  auto steps = log->steps("it-run");
  ASSERT_TRUE(steps.ok()) << steps.status().to_string();
  ASSERT_FALSE(steps->empty());
  EXPECT_LT(steps->size(), static_cast<std::size_t>(kSteps)) << "the disk filled too late";
  for (const auto& step : *steps) {
    rewardlog::CandidateFilter filter;
    filter.step = step.get().getStep();
    auto candidates = log->candidates("it-run", filter);
    ASSERT_TRUE(candidates.ok());
    EXPECT_EQ(candidates->size(), 6u) << "step " << *filter.step;  // 3 tasks x 2 samples
  }
  log.reset();

  fs::remove(disk.sub("filler"));
  std::vector<std::string> resume = overrides;
  resume.push_back("--resume");
  auto resumed = start_learner(config, resume, "learner-resumed.log");
  rollout = start_worker(DICE_ROLLOUT_TEST_DOUBLE, "it/rollout/0");
  reward = start_worker(DICE_REWARD_TEST_DOUBLE, "it/reward/0");
  ASSERT_EQ(resumed->wait_exit(kDeadline), 0) << read_file(dir_ / "learner-resumed.log");
  log = open_log(log_path);
  ASSERT_NE(log, nullptr);
  steps = log->steps("it-run");
  ASSERT_TRUE(steps.ok());
  ASSERT_EQ(steps->size(), static_cast<std::size_t>(kSteps));
  for (std::size_t k = 0; k < steps->size(); ++k) EXPECT_EQ((*steps)[k].get().getStep(), k);
  auto candidates = log->candidates("it-run");
  ASSERT_TRUE(candidates.ok());
  EXPECT_EQ(candidates->size(), 6u * kSteps);
}

TEST_F(LearnerIntegrationTest, AModelThatDoesNotLoadIsBadInput) {
  auto learner = start_learner(write_config(1, "tasks.json", 20, (dir_ / "missing").string()));
  EXPECT_EQ(learner->wait_exit(kDeadline), 2) << learner_log();
  EXPECT_NE(learner_log().find("initial policy"), std::string::npos) << learner_log();
}

TEST_F(LearnerIntegrationTest, SigtermDrainsAndLeavesAReadableLog) {
  auto learner = start_learner(write_config(1000));
  auto rollout = start_worker(DICE_ROLLOUT_TEST_DOUBLE, "it/rollout/0", /*sleep_ms=*/20);
  auto reward = start_worker(DICE_REWARD_TEST_DOUBLE, "it/reward/0");
  // Wait until the first step is in the log (the reader follows the writer as a secondary).
  std::unique_ptr<rewardlog::RewardLogReader> log;
  const auto end = std::chrono::steady_clock::now() + kDeadline;
  bool has_step = false;
  while (!has_step && std::chrono::steady_clock::now() < end) {
    if (!log) log = open_log();
    if (log && log->catch_up().ok()) {
      auto steps = log->steps("it-run");
      has_step = steps.ok() && !steps->empty();
    }
    if (!has_step) std::this_thread::sleep_for(milliseconds(20));
  }
  ASSERT_TRUE(has_step) << learner_log();
  // The counter moves just after the step's records are appended: poll it, do not race it.
  std::string metrics = scrape_metrics(metrics_port_);
  while (metrics.find("dice_learner_steps_total 0\n") != std::string::npos &&
         std::chrono::steady_clock::now() < end) {
    std::this_thread::sleep_for(milliseconds(20));
    metrics = scrape_metrics(metrics_port_);
  }
  EXPECT_NE(metrics.find("dice_learner_steps_total "), std::string::npos) << metrics;
  EXPECT_EQ(metrics.find("dice_learner_steps_total 0\n"), std::string::npos) << metrics;
  EXPECT_NE(metrics.find("dice_learner_transport_workers 2"), std::string::npos) << metrics;
  EXPECT_NE(metrics.find("dice_learner_policy_version 0"), std::string::npos) << metrics;
  learner->signal(SIGTERM);
  ASSERT_EQ(learner->wait_exit(kDeadline), 0) << learner_log();
  EXPECT_EQ(rollout->wait_exit(milliseconds(5000)), 0);
  EXPECT_EQ(reward->wait_exit(milliseconds(5000)), 0);

  ASSERT_TRUE(log->catch_up().ok());
  auto steps = log->steps("it-run");
  ASSERT_TRUE(steps.ok()) << steps.status().to_string();
  ASSERT_GE(steps->size(), 1u);
  EXPECT_LT(steps->size(), 1000u);
  auto candidates = log->candidates("it-run");
  ASSERT_TRUE(candidates.ok());
  // Every finished step has its 6 candidates; the drained step finished too (no timeout here).
  EXPECT_EQ(candidates->size(), steps->size() * 6u) << learner_log();
  EXPECT_NE(learner_log().find("stop requested"), std::string::npos);
}

TEST_F(LearnerIntegrationTest, SigtermWithoutWorkersExitsAtOnce) {
  auto learner = start_learner(write_config(2));
  // Wait until the run is recorded and its phases are planned (the learner logs "policy update"
  // just before its first step: a stop before that ends the run at a phase boundary, without the
  // drain this test is about), then stop it.
  std::unique_ptr<rewardlog::RewardLogReader> log;
  const auto end = std::chrono::steady_clock::now() + kDeadline;
  bool started = false;
  while (!started && std::chrono::steady_clock::now() < end) {
    if (!log) log = open_log();
    started = log && log->catch_up().ok() && log->run("it-run").ok() &&
              learner_log().find("policy update: ") != std::string::npos;
    if (!started) std::this_thread::sleep_for(milliseconds(20));
  }
  ASSERT_TRUE(started) << learner_log();
  learner->signal(SIGTERM);
  // Well inside the 10 s drain timeout: with no worker nothing could finish.
  EXPECT_EQ(learner->wait_exit(milliseconds(5000)), 0) << learner_log();
  ASSERT_TRUE(log->catch_up().ok());
  auto steps = log->steps("it-run");
  ASSERT_TRUE(steps.ok());
  EXPECT_TRUE(steps->empty());
  EXPECT_NE(learner_log().find("stopped with no worker connected"), std::string::npos);
}

TEST_F(LearnerIntegrationTest, LostRewardWorkerSkipsGroupsInsteadOfHanging) {
  // No reward worker: no verdict ever comes; each group times out after 1 s and the run ends.
  auto learner = start_learner(write_config(1, "tasks.json", /*group_timeout_s=*/1));
  auto rollout = start_worker(DICE_ROLLOUT_TEST_DOUBLE, "it/rollout/0");
  ASSERT_EQ(learner->wait_exit(kDeadline), 0) << learner_log();
  EXPECT_EQ(rollout->wait_exit(milliseconds(5000)), 0);
  auto log = open_log();
  ASSERT_NE(log, nullptr);
  auto steps = log->steps("it-run");
  ASSERT_TRUE(steps.ok());
  ASSERT_EQ(steps->size(), 1u);
  EXPECT_EQ(steps->front().get().getNumCandidates(), 0u);
  auto skipped = log->metrics("it-run", std::string("learner/groups_skipped"));
  ASSERT_TRUE(skipped.ok());
  ASSERT_EQ(skipped->size(), 1u);
  EXPECT_EQ(skipped->front().get().getValue(), 3.0);
  EXPECT_NE(learner_log().find("group skipped"), std::string::npos);
}

TEST_F(LearnerIntegrationTest, BadTaskFileExitsTwoNamingTheEntry) {
  std::ofstream(dir_ / "bad.json") << R"([{"idx": 1, "level": "1"}])";
  auto learner = start_learner(write_config(1, "bad.json"));
  EXPECT_EQ(learner->wait_exit(kDeadline), 2);
  EXPECT_NE(learner_log().find("bad.json:[0]: missing \"pytorch_code\""), std::string::npos)
      << learner_log();
  EXPECT_FALSE(fs::exists(dir_ / "log"));  // nothing written for a run that never started
}

TEST_F(LearnerIntegrationTest, RefusesARunIdTheLogAlreadyHolds) {
  const std::string config = write_config(1);
  {
    auto learner = start_learner(config);
    auto rollout = start_worker(DICE_ROLLOUT_TEST_DOUBLE, "it/rollout/0");
    auto reward = start_worker(DICE_REWARD_TEST_DOUBLE, "it/reward/0");
    ASSERT_EQ(learner->wait_exit(kDeadline), 0) << learner_log();
  }
  auto again = start_learner(config);
  EXPECT_EQ(again->wait_exit(kDeadline), 2);
  EXPECT_NE(learner_log().find("already holds run 'it-run'; continue it with --resume"),
            std::string::npos)
      << learner_log();
}

// A learner killed mid-run (SIGKILL: no drain, no goodbye) and started again with --resume ends
// with the same weights, byte for byte, as a run that was never interrupted, and the log holds
// every step once, numbered without gaps, each with its candidates once.
void LearnerIntegrationTest::expect_resume_ends_as_uninterrupted() {
  const std::string policy = write_tiny_policy();
  ASSERT_FALSE(policy.empty()) << read_file(dir_ / "writer.log");
  const int num_steps = 6;
  const std::string config = write_config(num_steps, "tasks.json", 20, policy);
  ASSERT_NO_FATAL_FAILURE(run_to_the_end(config));
  const std::string uninterrupted =
      read_file(dir_ / "checkpoints" / "it-run" / "phase-e2e" / "model.safetensors");
  ASSERT_GT(uninterrupted.size(), 1000u);
  std::vector<std::uint64_t> versions;
  {
    auto log = open_log();
    ASSERT_NE(log, nullptr);
    auto steps = log->steps("it-run");
    ASSERT_TRUE(steps.ok());
    for (const auto& step : *steps) versions.push_back(step.get().getPolicyVersion());
  }
  const std::string resumed_log = run_killed_and_resumed(config, num_steps);
  ASSERT_FALSE(HasFailure());

  auto log = open_log();
  ASSERT_NE(log, nullptr);
  auto steps = log->steps("it-run");
  ASSERT_TRUE(steps.ok());
  ASSERT_EQ(steps->size(), static_cast<std::size_t>(num_steps)) << resumed_log;
  for (std::size_t i = 0; i < steps->size(); ++i) {
    EXPECT_EQ((*steps)[i].get().getStep(), i);
    EXPECT_EQ((*steps)[i].get().getPolicyVersion(), versions[i]) << "step " << i;
  }
  auto candidates = log->candidates("it-run");
  ASSERT_TRUE(candidates.ok());
  EXPECT_EQ(candidates->size(), static_cast<std::size_t>(num_steps) * 6u);
  for (const auto& c : *candidates) EXPECT_LT(c.get().getVerdict().getStep(), 6u);
  EXPECT_NE(std::string(log->run("it-run")->get().getNote().cStr()).find("; resumed at step "),
            std::string::npos);

  EXPECT_EQ(read_file(dir_ / "checkpoints" / "it-run" / "phase-e2e" / "model.safetensors"),
            uninterrupted)
      << "the resumed run's final weights differ from the uninterrupted run's";
}

TEST_F(LearnerIntegrationTest, AResumeAfterSigkillEndsWithTheWeightsOfAnUninterruptedRun) {
  expect_resume_ends_as_uninterrupted();
}

// The same with the KL against the phase's starting weights: the resumed learner holds later
// weights, so it must read the reference (here the initial policy) rather than copy its own.
TEST_F(LearnerIntegrationTest, AResumeKeepsThePhaseStartKlReference) {
  learner_extra_ = "  loss:\n    kl_reference: phase_start\n    kl_beta: 0.5\n";
  expect_resume_ends_as_uninterrupted();
  EXPECT_NE(read_file(dir_ / "learner-resumed.log").find("KL reference: the phase's starting"),
            std::string::npos);
}

// A run that finished its 2 steps, resumed over a curriculum that now has 3: the new step runs,
// the schedule goes on where it was, and the change is in the log and the run's note.
TEST_F(LearnerIntegrationTest, ResumingOverAGrownCurriculumRunsTheNewStepsAndSaysWhatChanged) {
  ASSERT_NO_FATAL_FAILURE(run_to_the_end(write_config(2)));
  const std::string config = write_config(3);
  auto learner = start_learner(config, {"--resume"}, "learner-resumed.log");
  auto rollout = start_worker(DICE_ROLLOUT_TEST_DOUBLE, "it/rollout/0");
  auto reward = start_worker(DICE_REWARD_TEST_DOUBLE, "it/reward/0");
  const std::string resumed_log = [&] {
    const int code = learner->wait_exit(kDeadline);
    std::string text = read_file(dir_ / "learner-resumed.log");
    EXPECT_EQ(code, 0) << text;
    return text;
  }();
  EXPECT_NE(resumed_log.find("curriculum changed since the resume point: phase \\\"e2e\\\": steps "
                             "2 -> 3"),
            std::string::npos)
      << resumed_log;

  auto log = open_log();
  ASSERT_NE(log, nullptr);
  auto steps = log->steps("it-run");
  ASSERT_TRUE(steps.ok());
  ASSERT_EQ(steps->size(), 3u);
  std::multiset<std::string> third;
  auto candidates = log->candidates("it-run");
  ASSERT_TRUE(candidates.ok());
  for (const auto& c : *candidates) {
    if (c.get().getVerdict().getStep() == 2) third.insert(c.get().getVerdict().getTaskId().cStr());
  }
  // Steps 0 and 1 took 11 12 14 and 10 11 12 (see RunsTwoStepsAndLogsEveryCandidateOnce).
  EXPECT_EQ(third, (std::multiset<std::string>{"14", "14", "10", "10", "11", "11"}));
  EXPECT_NE(std::string(log->run("it-run")->get().getNote().cStr())
                .find("resumed at step 2 (restart 1), curriculum changed: phase \"e2e\" had "
                      "finished after 2 steps; it goes on to 3; phase \"e2e\": steps 2 -> 3"),
            std::string::npos)
      << log->run("it-run")->get().getNote().cStr();
}

}  // namespace
}  // namespace dice
