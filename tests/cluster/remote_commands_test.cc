// Unit tests of the ssh backend's generated command (cluster/remote_commands.h). These check the
// text only; nothing here runs ssh.
#include "cluster/remote_commands.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

namespace dice::cluster {
namespace {

ClusterOptions two_nodes() {
  ClusterOptions options;
  options.nodes = {
      NodeOptions{
          "gpu1", {NodeRole::kLearner, NodeRole::kReward}, {{"learner", {0, 1}}, {"reward", {2}}}},
      NodeOptions{"gpu2", {NodeRole::kRollout}, {{"rollout", {0, 1}}}}};
  return options;
}

// Runs `script` with sh -c and returns what it prints: proves the quoting survives a real shell.
std::string run_shell(const std::string& script) {
  std::string command = "sh -c " + shell_quote(script);
  FILE* pipe = popen(command.c_str(), "r");
  std::string out;
  char buffer[256];
  while (pipe != nullptr && fgets(buffer, sizeof(buffer), pipe) != nullptr) out += buffer;
  if (pipe != nullptr) pclose(pipe);
  return out;
}

TEST(ShellQuoteTest, ARealShellGetsTheArgumentBack) {
  for (std::string arg : {"plain", "two words", "it's", "$HOME `x` \"q\" \\", ""}) {
    EXPECT_EQ(run_shell("printf %s " + shell_quote(arg)), arg);
  }
}

TEST(SshCommandTest, BuildsTheRemoteCommandPerNode) {
  ClusterOptions options = two_nodes();
  options.ssh.user = "dice";
  options.ssh.extra_args = {"-p", "2222"};
  PlanInputs inputs{"/shared/run's.yaml", {"learner.optimizer.lr=2e-6"}, "r1", "", false};
  std::vector<std::string> argv = ssh_command(options, 1, "/shared/work", inputs);
  ASSERT_EQ(argv.size(), 5u);
  EXPECT_EQ(argv[0], "ssh");
  EXPECT_EQ(argv[1], "-p");
  EXPECT_EQ(argv[2], "2222");
  EXPECT_EQ(argv[3], "dice@gpu2");
  EXPECT_EQ(argv[4],
            "cd '/shared/work' && dice-cluster-node up --config '/shared/run'\\''s.yaml' "
            "--run-id 'r1' --node-index 1 'learner.optimizer.lr=2e-6'");

  options.ssh.user.clear();
  options.ssh.extra_args.clear();
  options.ssh.remote_dir = "/opt/dice";
  argv = ssh_command(options, 0, "/shared/work", inputs);
  ASSERT_EQ(argv.size(), 3u);
  EXPECT_EQ(argv[1], "gpu1");
  EXPECT_EQ(argv[2].rfind("cd '/opt/dice' && ", 0), 0u) << argv[2];
}

}  // namespace
}  // namespace dice::cluster
