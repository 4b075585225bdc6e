// dice-eval (the executable) on bad input: every refusal names what and where, exits 2 for bad
// arguments or problem sets and 1 for what this machine cannot do, and starts nothing. (The
// whole tool on the real services: tests/system/dice_eval_system_test.cc.)
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "tests/support/shell_command.h"
#include "tests/support/temp_dir.h"

namespace dice::eval {
namespace {

namespace fs = std::filesystem;

using Ran = testing_util::CommandResult;

Ran dice_eval(const std::string& args) {
  return testing_util::run_command(std::string(DICE_EVAL_EXE) + " " + args);
}

bool has_gpu() {
  return std::system("nvidia-smi -L 2>/dev/null | grep -q '^GPU '") == 0;
}

class DiceEvalCliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    fs::create_directories(dir_.sub("model"));
    std::ofstream(dir_.sub("model/config.json")) << "{}";
    problems_ = std::string(DICE_EVAL_FIXTURES) + "/KernelBench";
  }
  // The arguments every case shares: a CPU config, a mode without a GPU, no services reached.
  std::string args(const std::string& more) const {
    return "--model " + dir_.sub("model") + " --out " + dir_.sub("out") + " --config " +
           DICE_SOURCE_DIR + "/configs/toy.yaml --reward-mode extraction_only " + more;
  }
  testing_util::TempDir dir_{"dice-eval-cli"};
  std::string problems_;
};

TEST_F(DiceEvalCliTest, HelpAndBadFlags) {
  Ran help = dice_eval("--help");
  EXPECT_EQ(help.rc, 0);
  EXPECT_NE(help.output.find("Usage: dice-eval --model DIR --problems PATH --out DIR"),
            std::string::npos);
  EXPECT_NE(help.output.find("The noise check"), std::string::npos);
  Ran bad = dice_eval(args("--problems " + problems_ + " --samples many"));
  EXPECT_EQ(bad.rc, 2) << bad.output;
  EXPECT_NE(bad.output.find("dice-eval: --samples: expected an integer"), std::string::npos)
      << bad.output;
  EXPECT_NE(bad.output.find("Run 'dice-eval --help'"), std::string::npos);
  EXPECT_FALSE(fs::exists(dir_.sub("out")));
}

TEST_F(DiceEvalCliTest, BadProblemSetsAreNamed) {
  Ran missing = dice_eval(args("--problems " + dir_.sub("KernelBench")));
  EXPECT_EQ(missing.rc, 2) << missing.output;
  EXPECT_NE(
      missing.output.find("problem set " + dir_.sub("KernelBench") + ": no such file or folder"),
      std::string::npos)
      << missing.output;

  fs::create_directories(dir_.sub("level1"));
  std::ofstream(dir_.sub("level1/1_Candidate.py"))
      << "import torch\nclass ModelNew(torch.nn.Module):\n    pass\n";
  Ran not_problem = dice_eval(args("--problems " + dir_.sub("level1")));
  EXPECT_EQ(not_problem.rc, 2) << not_problem.output;
  EXPECT_NE(not_problem.output.find(dir_.sub("level1/1_Candidate.py") +
                                    ": not a KernelBench problem: no top-level `class Model`"),
            std::string::npos)
      << not_problem.output;
  EXPECT_FALSE(fs::exists(dir_.sub("out")));
}

TEST_F(DiceEvalCliTest, BadModelsConfigsAndOutputFoldersAreNamed) {
  Ran no_model = dice_eval("--model " + dir_.sub("nope") + " --problems " + problems_ + " --out " +
                           dir_.sub("out"));
  EXPECT_EQ(no_model.rc, 2) << no_model.output;
  EXPECT_NE(no_model.output.find("--model " + dir_.sub("nope") + ": no such folder"),
            std::string::npos)
      << no_model.output;

  fs::create_directories(dir_.sub("empty"));
  Ran no_config = dice_eval("--model " + dir_.sub("empty") + " --problems " + problems_ +
                            " --out " + dir_.sub("out"));
  EXPECT_EQ(no_config.rc, 2);
  EXPECT_NE(no_config.output.find("no config.json in it"), std::string::npos) << no_config.output;

  // configs/toy.yaml keeps 2,560 tokens of KV cache per sequence: DICE's 4,096 cannot fit.
  Ran too_long = dice_eval(args("--problems " + problems_));
  EXPECT_EQ(too_long.rc, 2) << too_long.output;
  EXPECT_NE(too_long.output.find("--max-new-tokens 4096 cannot fit: rollout.max_sequence_length "
                                 "is 2560"),
            std::string::npos)
      << too_long.output;

  Ran bad_override = dice_eval(
      args("--problems " + problems_ + " --max-new-tokens 64 " + "reward.timeout_seconds=soon"));
  EXPECT_EQ(bad_override.rc, 2) << bad_override.output;
  EXPECT_NE(bad_override.output.find("reward.timeout_seconds"), std::string::npos)
      << bad_override.output;

  // An output folder that holds another evaluation.
  fs::create_directories(dir_.sub("out"));
  std::ofstream(dir_.sub("out/evaluation.json"))
      << R"({"dice_eval": 1, "id": "eval-other", "settings": {}})";
  Ran other = dice_eval(args("--problems " + problems_ + " --max-new-tokens 64"));
  EXPECT_EQ(other.rc, 2) << other.output;
  EXPECT_NE(other.output.find(dir_.sub("out/evaluation.json") + ": the folder holds evaluation "
                                                                "eval-other"),
            std::string::npos)
      << other.output;

  Ran no_cluster = dice_eval(args("--problems " + problems_ + " --max-new-tokens 64 --out " +
                                  dir_.sub("out2") + " --cluster " + dir_.sub("no-cluster")));
  EXPECT_EQ(no_cluster.rc, 2) << no_cluster.output;
  EXPECT_NE(no_cluster.output.find("no dice-cluster executable " + dir_.sub("no-cluster")),
            std::string::npos)
      << no_cluster.output;
}

TEST_F(DiceEvalCliTest, WithoutAGpuFullJudgingIsRefusedAndSaidSo) {
  if (has_gpu()) GTEST_SKIP() << "this machine has a GPU";
  Ran full = dice_eval("--model " + dir_.sub("model") + " --out " + dir_.sub("out") +
                       " --problems " + problems_ + " --reward-mode full --max-new-tokens 64");
  EXPECT_EQ(full.rc, 1) << full.output;
  EXPECT_NE(full.output.find("NO GPU found"), std::string::npos) << full.output;
  EXPECT_NE(full.output.find("this machine has none: nothing was evaluated"), std::string::npos)
      << full.output;
  EXPECT_FALSE(fs::exists(dir_.sub("out")));

  // Without --reward-mode: a mode that says what it is, loudly.
  Ran cpu = dice_eval("--model " + dir_.sub("model") + " --out " + dir_.sub("out") +
                      " --problems " + problems_ + " --max-new-tokens 4096");
  EXPECT_NE(cpu.output.find("NO number in this table means a correct kernel"), std::string::npos)
      << cpu.output;
}

}  // namespace
}  // namespace dice::eval
