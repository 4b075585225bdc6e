// Unit tests of the ssh and slurm backends' generated commands (cluster/remote_commands.h). These
// check the text only; nothing here runs ssh or Slurm.
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

TEST(SlurmScriptTest, OneSrunStepPerServiceOnItsNode) {
  ClusterOptions options = two_nodes();
  options.backend = ClusterBackend::kSlurm;
  options.slurm.partition = "gpu";
  options.slurm.account = "rl";
  options.slurm.extra_args = {"--qos=high"};
  options.local.bin_dir = "/shared/bin";
  PlanInputs inputs{"/shared/run.yaml", {"run.log_level=debug"}, "r2", "", false};
  Result<std::vector<ServiceSpec>> services = plan_services(options, inputs);
  ASSERT_TRUE(services.ok()) << services.status().to_string();
  ASSERT_EQ(services->size(), 4u);
  std::string script =
      slurm_batch_script(options, *services, "/shared/work", "/shared/state", "r2");

  EXPECT_EQ(script.rfind("#!/bin/bash\n", 0), 0u);
  for (const char* line :
       {"#SBATCH --job-name=dice-r2\n", "#SBATCH --partition=gpu\n", "#SBATCH --time=24:00:00\n",
        "#SBATCH --account=rl\n", "#SBATCH --nodes=2\n", "#SBATCH --nodelist=gpu1,gpu2\n",
        "#SBATCH --ntasks=4\n", "#SBATCH --qos=high\n", "cd '/shared/work'\n", "\nwait\n"}) {
    EXPECT_NE(script.find(line), std::string::npos) << line << "\n" << script;
  }
  EXPECT_NE(script.find("srun --nodes=1 --ntasks=1 --nodelist=gpu2 --job-name=rollout-1 "
                        "--output='/shared/state/logs/rollout-1.log' '/shared/bin/dice-rollout' "
                        "'--config' '/shared/run.yaml' '--run-id' 'r2' '--worker-index' '1' "
                        "'run.log_level=debug' &\n"),
            std::string::npos)
      << script;
  int steps = 0;
  for (std::size_t at = script.find("\nsrun "); at != std::string::npos;
       at = script.find("\nsrun ", at + 1)) {
    ++steps;
  }
  EXPECT_EQ(steps, 4);

  // The script is valid bash.
  std::string path = "/tmp/dice_slurm_test_" + std::to_string(getpid()) + ".sh";
  std::ofstream(path) << script;
  EXPECT_EQ(std::system(("bash -n " + path).c_str()), 0);
  std::remove(path.c_str());
}

}  // namespace
}  // namespace dice::cluster
