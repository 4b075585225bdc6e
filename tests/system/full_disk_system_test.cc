// A disk that fills under a real run (issue 51 item 5): dice-cluster starts dice-learner,
// dice-rollout and, in dice-reward's place, op_name_reward_test_double; the run's reward log lies
// on a small tmpfs, which the test fills below the log's floor once a step is logged. Required:
// the learner exits 3 (kExitNoDiskSpace) and is not restarted, the supervisor stops the run and
// its stop reason says why, and every step logged before keeps each of its verdicts, once. With
// the space freed, `dice-cluster up` again with the same run id resumes the run to its end, each
// step and each verdict in the log once. Needs root for the tmpfs (skipped without).
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <thread>

#include "cluster/cluster_state.h"
#include "common/disk_space.h"
#include "rewardlog/reader.h"
#include "tests/support/shell_command.h"
#include "tests/support/small_tmpfs.h"
#include "tests/system/system_test_data.h"

namespace dice {
namespace {

namespace fs = std::filesystem;
using cluster::ClusterState;
using cluster::read_state_file;
using cluster::ServiceState;
using testing_util::CommandResult;
using testing_util::run_command;

constexpr int kSteps = 6;
constexpr int kVerdictsPerStep = 2 * 2;  // tasks_per_step x samples_per_task
constexpr std::uint64_t kMiB = 1024 * 1024;
constexpr auto kDeadline = std::chrono::seconds(300);

class FullDiskSystemTest : public testing_util::ToySystemTest {
 protected:
  void TearDown() override {
    if (!dir_.empty()) down("state-resumed");
    ToySystemTest::TearDown();
  }
  void down(const std::string& state) {
    run_command(std::string(DICE_CLUSTER_EXE) + " down --state-dir " + (dir_ / state).string());
  }
  // The run's verdicts in the log at `path`, per step/task/group/sample (each should be 1), and
  // the steps logged.
  void read_log(const std::string& path, const std::string& run_id,
                std::map<std::string, int>* verdicts_of, std::size_t* steps) const {
    auto log = open_reward_log(path);
    ASSERT_TRUE(log.ok()) << log.status().to_string();
    auto logged = (*log)->steps(run_id);
    ASSERT_TRUE(logged.ok()) << logged.status().to_string();
    *steps = logged->size();
    auto candidates = (*log)->candidates(run_id, {});
    ASSERT_TRUE(candidates.ok()) << candidates.status().to_string();
    for (const auto& c : *candidates) {
      auto v = c.get().getVerdict();
      ++(*verdicts_of)[std::to_string(v.getStep()) + "/" + v.getTaskId().cStr() + "/" +
                       std::to_string(v.getGroup()) + "/" + std::to_string(v.getSampleIndex())];
    }
  }
};

TEST_F(FullDiskSystemTest,
       ADiskThatFillsEndsTheRunWithTheReasonWithoutARestartAndKeepsTheVerdicts) {
  testing_util::SmallTmpfs disk(8192);
  if (!disk.mounted()) GTEST_SKIP() << disk.skip_reason();
  ASSERT_NO_FATAL_FAILURE(make_data_and_model("op_tasks.json"));
  write_rl_curriculum(kSteps, 2, 2);
  const std::string run_id = "full-disk-" + std::to_string(getpid());
  const std::string log_path = disk.sub("log");
  std::vector<std::string> overrides = toy_run_overrides(run_id);
  const std::vector<std::string> own = {
      "curriculum_file=" + (dir_ / "curriculum.yaml").string(),
      "run.reward_log_path=" + log_path,
      // The reward log keeps a quarter of it free: 1 MiB.
      "run.min_free_disk_mb=4",
      "learner.seed=7",
      "learner.async.max_ahead=0",
      "rollout.sampling.max_new_tokens=48",
      "cluster.local.executables={reward: " + std::string(DICE_OP_NAME_REWARD_EXE) + "}",
      "cluster.local.restart_backoff_ms=100",
  };
  overrides.insert(overrides.end(), own.begin(), own.end());
  CommandResult started = up_toy_run(overrides);
  ASSERT_EQ(started.rc, 0) << started.output;

  // Once a step is logged, the disk is filled to 64 KiB below the log's floor.
  std::unique_ptr<rewardlog::RewardLogReader> follower;
  bool logged = false;
  for (auto end = std::chrono::steady_clock::now() + kDeadline;
       !logged && std::chrono::steady_clock::now() < end;) {
    if (!follower) {
      auto opened = open_reward_log(log_path);
      if (opened.ok()) follower = std::move(opened).value();
    }
    if (follower && follower->catch_up().ok()) {
      auto steps = follower->steps(run_id);
      logged = steps.ok() && !steps->empty();
    }
    if (!logged) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  follower.reset();
  ASSERT_TRUE(logged) << "no step was logged";
  auto free_now = free_disk_bytes(disk.path());
  ASSERT_TRUE(free_now.ok()) << free_now.status().to_string();
  ASSERT_GT(*free_now, kMiB);
  std::ofstream(disk.sub("filler"), std::ios::binary)
      << std::string(*free_now - kMiB + 64 * 1024, 'f');

  CommandResult waited = run_command(std::string(DICE_CLUSTER_EXE) + " wait --timeout 300 " +
                                     "--state-dir " + (dir_ / "state").string());
  EXPECT_NE(waited.rc, 0) << "the run did not stop: " << waited.output;
  Result<ClusterState> state = read_state_file((dir_ / "state").string());
  for (auto end = std::chrono::steady_clock::now() + std::chrono::seconds(60);
       state.ok() && state->supervisor_state != "stopped" && std::chrono::steady_clock::now() < end;
       state = read_state_file((dir_ / "state").string())) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_TRUE(state.ok()) << state.status().to_string();
  EXPECT_EQ(state->supervisor_state, "stopped");
  const ServiceState* learner = nullptr;
  for (const ServiceState& s : state->services) {
    if (s.role == "learner") learner = &s;
  }
  ASSERT_NE(learner, nullptr);
  EXPECT_EQ(learner->restarts, 0) << "restarted into the same disk";
  EXPECT_EQ(learner->last_exit, "exit 3");
  EXPECT_NE(state->stop_reason.find(learner->name + " exited with status 3 (no disk space"),
            std::string::npos)
      << state->stop_reason;
  const std::string learner_log = testing_util::read_text(learner->log_path);
  EXPECT_NE(learner_log.find(log_path + ": not enough free disk space"), std::string::npos)
      << learner_log;

  std::map<std::string, int> verdicts_of;
  std::size_t steps = 0;
  ASSERT_NO_FATAL_FAILURE(read_log(log_path, run_id, &verdicts_of, &steps));
  ASSERT_GE(steps, 1u);
  EXPECT_LT(steps, static_cast<std::size_t>(kSteps)) << "the disk filled too late";
  EXPECT_EQ(verdicts_of.size(), steps * kVerdictsPerStep) << "a verdict written was lost";
  for (const auto& [sample, n] : verdicts_of) EXPECT_EQ(n, 1) << sample;

  // The operator frees the space and brings the run up again: it resumes to its end.
  fs::remove(disk.sub("filler"));
  down("state");
  std::vector<std::string> again = overrides;
  again.push_back("cluster.local.state_dir=" + (dir_ / "state-resumed").string());
  CommandResult resumed = up_toy_run(again);
  ASSERT_EQ(resumed.rc, 0) << resumed.output;
  waited = run_command(std::string(DICE_CLUSTER_EXE) + " wait --timeout 300 --state-dir " +
                       (dir_ / "state-resumed").string());
  ASSERT_EQ(waited.rc, 0) << "the resumed run did not end: " << waited.output;
  down("state-resumed");
  verdicts_of.clear();
  ASSERT_NO_FATAL_FAILURE(read_log(log_path, run_id, &verdicts_of, &steps));
  EXPECT_EQ(steps, static_cast<std::size_t>(kSteps));
  EXPECT_EQ(verdicts_of.size(), static_cast<std::size_t>(kSteps * kVerdictsPerStep));
  for (const auto& [sample, n] : verdicts_of) EXPECT_EQ(n, 1) << sample;
}

}  // namespace
}  // namespace dice
