// Expired work is cancelled at the workers, in a real run (issue 51 item 2): dice-cluster starts
// dice-learner, dice-rollout and, in dice-reward's place, one op_name_reward_test_double of four
// slots whose judging of the task neg-1's candidates outlasts its group
// (DICE_TEST_HANG_OP=neg: it waits until the item is cancelled). The learner's group timeout
// skips those groups; the learner must then cancel their evaluations at the worker, which stops
// each and answers nothing. Required: the run ends on its own with every step, each hanging
// evaluation is cancelled at the worker (its log says so once per item), no verdict of neg-1 is
// in the reward log, and each sample of the other task has one verdict.
#include <gtest/gtest.h>
#include <unistd.h>

#include <map>
#include <set>
#include <string>

#include "rewardlog/reader.h"
#include "tests/support/shell_command.h"
#include "tests/system/system_test_data.h"

namespace dice {
namespace {

using testing_util::CommandResult;
using testing_util::read_text;
using testing_util::run_command;

constexpr int kSteps = 2;
constexpr int kSamplesPerTask = 2;

// How often `needle` occurs in `text`.
int occurrences(const std::string& text, const std::string& needle) {
  int n = 0;
  for (std::size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1))
    ++n;
  return n;
}

class ExpiredWorkSystemTest : public testing_util::ToySystemTest {};

TEST_F(ExpiredWorkSystemTest, TheJudgingOfASkippedGroupIsCancelledAtItsWorker) {
  ASSERT_NO_FATAL_FAILURE(make_data_and_model("op_tasks.json"));
  write_rl_curriculum(kSteps, 2, kSamplesPerTask);
  const std::string run_id = "expired-" + std::to_string(getpid());
  std::vector<std::string> overrides = toy_run_overrides(run_id);
  const std::vector<std::string> own = {
      "curriculum_file=" + (dir_ / "curriculum.yaml").string(),
      "learner.seed=7",
      "learner.async.max_ahead=0",
      // A group not judged in 4 s is skipped (the hanging ones would take 120 s).
      "learner.group_timeout_seconds=4",
      "rollout.sampling.max_new_tokens=48",
      "cluster.local.executables={reward: " + std::string(DICE_OP_NAME_REWARD_EXE) + "}",
      "cluster.nodes=[{host: localhost, roles: [learner, rollout, reward], gpus: {learner: [0], "
      "rollout: [0], reward: [0]}}]",
  };
  overrides.insert(overrides.end(), own.begin(), own.end());
  // Four slots: the hanging evaluations leave the others room to be judged.
  CommandResult up = up_toy_run(overrides, "DICE_TEST_HANG_OP=neg DICE_TEST_REWARD_SLOTS=4");
  ASSERT_EQ(up.rc, 0) << up.output;
  CommandResult waited =
      run_command(std::string(DICE_CLUSTER_EXE) + " wait --timeout 300 --state-dir " +
                  (dir_ / "state").string());
  ASSERT_EQ(waited.rc, 0) << "the run did not end on its own: " << waited.output;

  const std::string worker_log = read_text(dir_ / "state" / "logs" / "reward-0.log");
  EXPECT_EQ(occurrences(worker_log, "op_name_reward_test_double: cancelled by the learner"),
            kSteps * kSamplesPerTask)
      << "every hanging evaluation is cancelled at its worker, once\n"
      << worker_log;

  auto log = open_reward_log();
  ASSERT_TRUE(log.ok()) << log.status().to_string();
  auto steps = (*log)->steps(run_id);
  ASSERT_TRUE(steps.ok()) << steps.status().to_string();
  EXPECT_EQ(steps->size(), static_cast<std::size_t>(kSteps));
  auto candidates = (*log)->candidates(run_id, {});
  ASSERT_TRUE(candidates.ok()) << candidates.status().to_string();
  std::map<std::string, int> verdicts_of;  // per sample of the other task
  int hanging = 0;
  for (const auto& c : *candidates) {
    auto v = c.get().getVerdict();
    if (std::string(v.getTaskId().cStr()) == "neg-1") {
      ++hanging;
      continue;
    }
    ++verdicts_of[std::to_string(v.getStep()) + "/" + std::to_string(v.getGroup()) + "/" +
                  std::to_string(v.getSampleIndex())];
  }
  EXPECT_EQ(hanging, 0) << "a cancelled evaluation was answered";
  EXPECT_EQ(verdicts_of.size(), static_cast<std::size_t>(kSteps * kSamplesPerTask));
  for (const auto& [sample, n] : verdicts_of) EXPECT_EQ(n, 1) << sample;
}

}  // namespace
}  // namespace dice
