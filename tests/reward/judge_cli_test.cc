// dice-judge as a process: bad flags and bad input exit 2 naming what is wrong, and on a machine
// without a GPU toolchain it exits 4 (kExitNoDevice) and says so, after checking its input.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include <sys/wait.h>

#include <gtest/gtest.h>

#include "common/exit_codes.h"
#include "common/remove_tree.h"

namespace {

struct CliRun {
  int code = -1;
  std::string output;  // stdout and stderr
};

CliRun run_judge(const std::string& args) {
  CliRun run;
  const std::string command = std::string(DICE_JUDGE_BIN) + " " + args + " 2>&1";
  FILE* pipe = popen(command.c_str(), "r");
  char buffer[4096];
  while (pipe && fgets(buffer, sizeof buffer, pipe)) run.output += buffer;
  const int status = pipe ? pclose(pipe) : -1;
  run.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return run;
}

std::string write_items(const std::string& name, const std::string& text) {
  const auto path = std::filesystem::temp_directory_path() / name;
  std::ofstream(path) << text;
  return path.string();
}

TEST(JudgeCliTest, BadFlagsAreNamed) {
  CliRun run = run_judge("--bogus 1");
  EXPECT_EQ(run.code, 2);
  EXPECT_NE(run.output.find("unknown flag --bogus"), std::string::npos) << run.output;
  run = run_judge("--items x.json --variants some");
  EXPECT_EQ(run.code, 2);
  EXPECT_NE(run.output.find("--variants \"some\": expected none or broken"), std::string::npos);
  run = run_judge("--items x.json --trials 0");
  EXPECT_EQ(run.code, 2);
  EXPECT_NE(run.output.find("--trials \"0\": expected an integer >= 1"), std::string::npos);
  run = run_judge("--items x.json --compile-memory-mb -5");
  EXPECT_EQ(run.code, 2);
  EXPECT_NE(run.output.find("--compile-memory-mb \"-5\": expected an integer >= 0"),
            std::string::npos)
      << run.output;
  run = run_judge("--items x.json --tolerance -1");
  EXPECT_EQ(run.code, 2);
  EXPECT_NE(run.output.find("--tolerance \"-1\": expected a positive number"), std::string::npos);
  run = run_judge("--items x.json --log-level loud");
  EXPECT_EQ(run.code, 2);
  EXPECT_NE(run.output.find("--log-level \"loud\": expected debug, info, warn or error"),
            std::string::npos)
      << run.output;
  run = run_judge("--items x.json --kernel-check nvtx");
  EXPECT_EQ(run.code, 2);
  EXPECT_NE(run.output.find("--kernel-check \"nvtx\": expected one of auto, profiler, cupti"),
            std::string::npos)
      << run.output;
  run = run_judge("--items x.json --timing-exclusive maybe");
  EXPECT_EQ(run.code, 2);
  EXPECT_NE(run.output.find("--timing-exclusive \"maybe\": expected on or off"), std::string::npos)
      << run.output;
  run = run_judge("--timing on");
  EXPECT_EQ(run.code, 2);
  EXPECT_NE(run.output.find("--items is required"), std::string::npos);
  run = run_judge("--items");
  EXPECT_EQ(run.code, 2);
  EXPECT_NE(run.output.find("--items needs a value"), std::string::npos);
  EXPECT_EQ(run_judge("--help").code, 0);
}

TEST(JudgeCliTest, BadInputIsNamed) {
  const std::string path = write_items("dice-judge-cli-bad.json", R"([{"id": 4, "middle": ""}])");
  CliRun run = run_judge("--items " + path);
  EXPECT_EQ(run.code, 2);
  EXPECT_NE(run.output.find(path + ": item 0 (id 4): \"pytorch_code\" is missing"),
            std::string::npos)
      << run.output;
  run = run_judge("--items /nonexistent/items.json");
  EXPECT_EQ(run.code, 2);
  EXPECT_NE(run.output.find("/nonexistent/items.json: cannot open"), std::string::npos);
}

TEST(JudgeCliTest, NoGpuToolchainExitsNoDevice) {
  if (std::system("nvidia-smi -L > /dev/null 2>&1") == 0) {
    GTEST_SKIP() << "this machine has a GPU: the no-GPU path cannot be seen here";
  }
  const std::string path = write_items(
      "dice-judge-cli-ok.json",
      R"([{"id": 1, "pytorch_code": "import torch\n", "candidate": "import torch\n"}])");
  CliRun run = run_judge("--items " + path + " --python python3");
  EXPECT_EQ(run.code, dice::kExitNoDevice) << run.output;
  EXPECT_NE(run.output.find("judging needs nvcc, PyTorch with CUDA and a GPU; nothing judged"),
            std::string::npos)
      << run.output;
}

}  // namespace

namespace {

// --resume skips what the --out file already holds; with everything there it judges nothing
// (so this runs without a GPU), and it needs --out.
TEST(JudgeCliTest, ResumeSkipsWhatTheOutFileHolds) {
  const std::string items =
      write_items("dice-judge-cli-resume.json",
                  R"([{"id": 1, "pytorch_code": "import torch\n", "candidate": "import torch\n"},
          {"id": "two", "pytorch_code": "import torch\n", "candidate": "import torch\n"}])");
  const std::string out = write_items("dice-judge-cli-resume.jsonl",
                                      "{\"id\": \"1\", \"variant\": \"original\"}\n"
                                      "{\"id\": \"two\", \"variant\": \"original\"}\n");
  CliRun run = run_judge("--items " + items + " --out " + out + " --resume");
  EXPECT_EQ(run.code, 0) << run.output;
  EXPECT_NE(run.output.find("--resume: 2 of 2 candidates already judged in " + out),
            std::string::npos)
      << run.output;
  run = run_judge("--items " + items + " --resume");
  EXPECT_EQ(run.code, 2);
  EXPECT_NE(run.output.find("--resume needs --out"), std::string::npos) << run.output;
  const std::string bad = write_items("dice-judge-cli-resume-bad.jsonl", "{\"id\": 1}\n[]\n");
  run = run_judge("--items " + items + " --out " + bad + " --resume");
  EXPECT_EQ(run.code, 2);
  EXPECT_NE(run.output.find(bad + ": line 2: not a verdict"), std::string::npos) << run.output;
}

TEST(JudgeCliTest, DumpOnlyWritesTheVariantsWithoutAGpu) {
  const std::string items = write_items("dice-judge-cli-dump.json", R"([{"id": 9,
    "pytorch_code": "import torch\n", "prefix": "import torch\n",
    "middle": "source = \"\"\"\n__global__ void k(float* o) { o[threadIdx.x] = 2.0f; }\n\"\"\"",
    "suffix": "\nclass ModelNew: pass\n"}])");
  const auto dir = std::filesystem::temp_directory_path() / "dice-judge-cli-dump";
  ASSERT_TRUE(dice::remove_tree(dir).ok());
  CliRun run = run_judge("--items " + items + " --variants broken --dump-only --dump-sources " +
                         dir.string());
  EXPECT_EQ(run.code, 0) << run.output;
  std::ifstream manifest(dir / "manifest.jsonl");
  std::string line, all;
  int lines = 0;
  while (std::getline(manifest, line)) {
    ++lines;
    all += line + "\n";
  }
  EXPECT_EQ(lines, 3) << all;
  EXPECT_NE(all.find("\"variant\": \"wrong_value\""), std::string::npos) << all;
  EXPECT_NE(all.find("\"variant\": \"store_off_by_one\""), std::string::npos) << all;
  EXPECT_TRUE(std::filesystem::exists(dir / "candidates" / "2.store_off_by_one.py"));
  EXPECT_EQ(run_judge("--items " + items + " --dump-only").code, 2);
  EXPECT_TRUE(dice::remove_tree(dir).ok());
}

}  // namespace
