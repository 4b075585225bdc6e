// A candidate that takes its reward worker down, in a real run (issue 51 item 2): dice-cluster
// starts dice-learner and dice-rollout, and in dice-reward's place two op_name_reward_test_double
// workers that SIGKILL themselves whenever they are asked to judge a candidate of the poison op
// (DICE_TEST_POISON_OP=neg: every sample of the task neg-1 is such a candidate). The supervisor
// restarts each killed worker; the learner's dispatcher sends a lost item to the next worker
// until cluster.transport.max_attempts dispatches ended with the worker lost, then answers it
// itself with a workerLost verdict (net/transport/lost_work_answer.h). Required: the run ends
// on its own with every step, every poison sample has exactly one verdict in the reward log,
// workerLost with reward 0, and every sample of the other task is judged by a worker, none
// answered workerLost. Each worker judges two candidates at once, so an honest one may go down
// beside the poison: the dispatcher sends both again alone and counts only lone losses.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include "rewardlog/reader.h"
#include "tests/support/shell_command.h"
#include "tests/system/system_test_data.h"

namespace dice {
namespace {

namespace fs = std::filesystem;
using FC = schema::FailureClass;
using testing_util::CommandResult;
using testing_util::run_command;

constexpr int kSteps = 2;
constexpr int kSamplesPerTask = 2;
constexpr int kMaxAttempts = 3;

class PoisonCandidateSystemTest : public testing_util::ToySystemTest {};

TEST_F(PoisonCandidateSystemTest, APoisonCandidateIsAnsweredWorkerLostAndTheRunGoesOn) {
  ASSERT_NO_FATAL_FAILURE(make_data_and_model("op_tasks.json"));
  write_rl_curriculum(kSteps, 2, kSamplesPerTask);
  const std::string run_id = "poison-" + std::to_string(getpid());
  std::vector<std::string> overrides = toy_run_overrides(run_id);
  const std::vector<std::string> own = {
      "curriculum_file=" + (dir_ / "curriculum.yaml").string(),
      "learner.seed=7",
      "learner.async.max_ahead=0",
      "rollout.sampling.max_new_tokens=48",
      "cluster.local.executables={reward: " + std::string(DICE_OP_NAME_REWARD_EXE) + "}",
      // Two reward workers: one judges while the other is restarted.
      "cluster.nodes=[{host: localhost, roles: [learner, rollout, reward], gpus: {learner: [0], "
      "rollout: [0], reward: [0, 1]}}]",
      "cluster.transport.max_attempts=" + std::to_string(kMaxAttempts),
      // A dead worker is noticed in 0.6 s and restarted at once.
      "cluster.heartbeat.interval_ms=100",
      "cluster.heartbeat.misses_before_dead=6",
      "cluster.local.restart_backoff_ms=100",
      "cluster.local.restart_backoff_max_ms=400",
      "cluster.local.max_restarts=1000",
      "cluster.local.max_restarts_per_run=100",
  };
  overrides.insert(overrides.end(), own.begin(), own.end());
  // Two slots a worker, as dice-reward has several: an honest candidate may be judged beside the
  // poison one and go down with it.
  CommandResult up = up_toy_run(overrides, "DICE_TEST_POISON_OP=neg DICE_TEST_REWARD_SLOTS=2");
  ASSERT_EQ(up.rc, 0) << up.output;
  CommandResult waited =
      run_command(std::string(DICE_CLUSTER_EXE) + " wait --timeout 500 --state-dir " +
                  (dir_ / "state").string());
  ASSERT_EQ(waited.rc, 0) << "the run did not end on its own: " << waited.output;

  auto log = open_reward_log();
  ASSERT_TRUE(log.ok()) << log.status().to_string();
  auto candidates = (*log)->candidates(run_id, {});
  ASSERT_TRUE(candidates.ok()) << candidates.status().to_string();

  std::map<std::string, int> verdicts_of;  // per sample: step/task/sample
  int poison = 0, poison_lost = 0, other = 0, other_lost = 0, judged = 0;
  std::set<std::uint64_t> steps;
  for (const auto& c : *candidates) {
    auto v = c.get().getVerdict();
    const std::string task = v.getTaskId().cStr();
    steps.insert(v.getStep());
    ++verdicts_of[std::to_string(v.getStep()) + "/" + task + "/" + std::to_string(v.getGroup()) +
                  "/" + std::to_string(v.getSampleIndex())];
    if (task == "neg-1") {
      ++poison;
      if (v.getFailure() == FC::WORKER_LOST && v.getReward() == 0.0f) ++poison_lost;
    } else {
      ++other;
      other_lost += v.getFailure() == FC::WORKER_LOST;
      const std::string excerpt = v.getLogExcerpt().cStr();
      judged += excerpt.rfind("op_name_reward_test_double", 0) == 0;
    }
  }
  EXPECT_EQ(steps.size(), static_cast<std::size_t>(kSteps)) << waited.output;
  for (const auto& [sample, n] : verdicts_of)
    EXPECT_EQ(n, 1) << sample << " has " << n << " verdicts";
  EXPECT_EQ(poison, kSteps * kSamplesPerTask);
  EXPECT_EQ(poison_lost, poison) << "every poison sample is answered workerLost, reward 0";
  EXPECT_EQ(other, kSteps * kSamplesPerTask) << "every honest sample has its verdict";
  EXPECT_EQ(other_lost, 0) << "no honest sample is answered workerLost";
  EXPECT_EQ(judged, other) << "every honest sample is judged by a worker";
}

}  // namespace
}  // namespace dice
