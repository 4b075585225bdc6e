// dice-config as a user runs it: the checked-in configs pass `check`, `print` output reloads, and
// bad input exits 2 with the error on stderr.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "common/remove_tree.h"

namespace {

const std::string kSource = DICE_SOURCE_DIR;
const std::string kTool = DICE_CONFIG_TOOL;

struct ToolRun {
  int exit_code = -1;
  std::string out;  // stdout and stderr together
};

// Runs dice-config with `args` (already shell-quoted where needed).
ToolRun run_tool(const std::string& args) {
  ToolRun run;
  std::string command = "'" + kTool + "' " + args + " 2>&1";
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return run;
  char buf[4096];
  std::size_t n;
  while ((n = fread(buf, 1, sizeof buf, pipe)) > 0) run.out.append(buf, n);
  int status = pclose(pipe);
  if (WIFEXITED(status)) run.exit_code = WEXITSTATUS(status);
  return run;
}

class TempDir {
 public:
  TempDir() {
    char pattern[] = "/tmp/dice_config_cli_testXXXXXX";
    path_ = mkdtemp(pattern);
  }
  ~TempDir() { EXPECT_TRUE(dice::remove_tree(path_).ok()); }
  std::string write(const std::string& name, const std::string& text) const {
    std::string path = path_ + "/" + name;
    std::ofstream(path) << text;
    return path;
  }

 private:
  std::string path_;
};

TEST(DiceConfigCliTest, CheckedInConfigsPassCheck) {
  ToolRun run = run_tool("check " + kSource + "/configs/local.yaml");
  EXPECT_EQ(run.exit_code, 0) << run.out;
  EXPECT_NE(run.out.find("ok: "), std::string::npos) << run.out;
  for (const char* model : {"sdar-1.7b", "sdar-4b", "sdar-8b"}) {
    run = run_tool("check --kind model " + kSource + "/configs/models/" + model + ".yaml");
    EXPECT_EQ(run.exit_code, 0) << model << ": " << run.out;
  }
  run = run_tool("check --kind curriculum " + kSource + "/configs/curriculum/dice.yaml");
  EXPECT_EQ(run.exit_code, 0) << run.out;
}

TEST(DiceConfigCliTest, PrintedConfigChecksAndPrintsTheSame) {
  ToolRun printed = run_tool("print " + kSource + "/configs/local.yaml reward.compile_jobs=2");
  ASSERT_EQ(printed.exit_code, 0) << printed.out;
  EXPECT_NE(printed.out.find("compile_jobs: 2\n"), std::string::npos) << printed.out;
  TempDir dir;
  std::string copy = dir.write("printed.yaml", printed.out);
  ToolRun again = run_tool("print " + copy);
  ASSERT_EQ(again.exit_code, 0) << again.out;
  EXPECT_EQ(again.out, printed.out);
}

TEST(DiceConfigCliTest, BadConfigExitsTwoWithTheLocatedError) {
  TempDir dir;
  std::string bad =
      dir.write("bad.yaml", "curriculum_file: x.yaml\nrollout:\n  model_path: m\n  max_bacth: 3\n");
  ToolRun run = run_tool("check " + bad);
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_NE(
      run.out.find(bad +
                   ":4:3: rollout.max_bacth: unknown key 'max_bacth' (did you mean 'max_batch'?)"),
      std::string::npos)
      << run.out;

  std::string malformed = dir.write("malformed.yaml", "rollout: [\n");
  run = run_tool("check " + malformed);
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_NE(run.out.find(malformed + ":2:1: invalid YAML"), std::string::npos) << run.out;
}

TEST(DiceConfigCliTest, BadOverrideExitsTwoNamingIt) {
  ToolRun run = run_tool("check " + kSource + "/configs/local.yaml rollout.sampling.top_k=-1");
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_NE(
      run.out.find(
          "override 'rollout.sampling.top_k=-1': rollout.sampling.top_k: must be >= 0, got -1"),
      std::string::npos)
      << run.out;
  run = run_tool("check " + kSource + "/configs/local.yaml rollout.sampling.top_k");
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_NE(run.out.find("expected KEY=VALUE"), std::string::npos) << run.out;
}

TEST(DiceConfigCliTest, UsageErrorsExitTwo) {
  EXPECT_EQ(run_tool("").exit_code, 2);
  EXPECT_EQ(run_tool("frobnicate x.yaml").exit_code, 2);
  EXPECT_EQ(run_tool("check").exit_code, 2);
  EXPECT_EQ(run_tool("check --kind nope x.yaml").exit_code, 2);
  ToolRun missing = run_tool("check /nonexistent/x.yaml");
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.out.find("/nonexistent/x.yaml: no such config file"), std::string::npos)
      << missing.out;
}

TEST(DiceConfigCliTest, DocsListEveryKey) {
  ToolRun run = run_tool("docs");
  EXPECT_EQ(run.exit_code, 0) << run.out;
  EXPECT_NE(
      run.out.find("| `learner.optimizer.lr` | number | `1e-06` | > 0 | AdamW learning rate."),
      std::string::npos)
      << run.out;
  EXPECT_NE(run.out.find("`cluster.nodes[].host`"), std::string::npos);
}

}  // namespace
