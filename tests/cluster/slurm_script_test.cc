// Unit tests of the slurm backend's batch script (cluster/slurm_script.h): its #SBATCH header and
// steps as text, and its restart loop run by bash with an srun test double (a shell script that
// runs the step's command here), so the policy is checked without a Slurm.
#include "cluster/slurm_script.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "cluster/remote_commands.h"
#include "cluster/slurm_query.h"
#include "common/remove_tree.h"

namespace dice::cluster {
namespace {

std::string make_temp_dir() {
  std::string pattern = (std::filesystem::temp_directory_path() / "dice_sbatch_XXXXXX").string();
  return mkdtemp(pattern.data());
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// Runs the batch script of `services` in `dir` with bash, srun replaced by a test double that runs
// the command after its options (output appended to --output); the script's exit status, its
// output in dir/out.
int run_script_with_srun_double(const std::string& dir, const ClusterOptions& options,
                                const std::vector<ServiceSpec>& services,
                                const std::string& state_dir, const std::string& run_id) {
  std::string srun = dir + "/bin/srun";
  std::filesystem::create_directories(dir + "/bin");
  std::ofstream(srun) << "#!/bin/bash\n"
                         "# srun test double: runs the command after the options, output to "
                         "--output.\n"
                         "out=/dev/null\n"
                         "while [[ $# -gt 0 && $1 == --* ]]; do\n"
                         "  [[ $1 == --output=* ]] && out=${1#--output=}\n"
                         "  shift\n"
                         "done\n"
                         "echo \"step of $*\" >>\"$out\"\n"
                         "exec \"$@\" >>\"$out\" 2>&1\n";
  chmod(srun.c_str(), 0755);
  std::ofstream(dir + "/job.sbatch")
      << slurm_batch_script(options, services, dir, state_dir, run_id);
  std::string command = "PATH=" + shell_quote(dir + "/bin") + ":\"$PATH\" bash " +
                        shell_quote(dir + "/job.sbatch") + " >" + shell_quote(dir + "/out") +
                        " 2>&1";
  return std::system(command.c_str());
}

// learner-0 (`learner`: the executable, then its arguments) and reward-0 (/bin/false: fails every
// time), both on gpu1.
std::vector<ServiceSpec> learner_and_failing_reward(std::vector<std::string> learner) {
  std::vector<ServiceSpec> services(2);
  services[0].name = "learner-0";
  services[0].node = "gpu1";
  services[0].executable = learner[0];
  services[0].args.assign(learner.begin() + 1, learner.end());
  services[1].name = "reward-0";
  services[1].node = "gpu1";
  services[1].executable = "/bin/false";
  return services;
}

// Restarts within milliseconds, given up after `max_restarts`.
ClusterOptions fast_restarts(ClusterOptions options, int max_restarts) {
  options.local.restart_backoff_ms = 10;
  options.local.restart_backoff_max_ms = 20;
  options.local.max_restarts = max_restarts;
  return options;
}

ClusterOptions two_nodes() {
  ClusterOptions options;
  options.backend = ClusterBackend::kSlurm;
  options.slurm.partition = "gpu";
  options.nodes = {
      NodeOptions{
          "gpu1", {NodeRole::kLearner, NodeRole::kReward}, {{"learner", {0, 1}}, {"reward", {2}}}},
      NodeOptions{"gpu2", {NodeRole::kRollout}, {{"rollout", {0, 1}}}}};
  return options;
}

TEST(SlurmScriptTest, OneJobOverTheNodesAndOneRestartedStepPerService) {
  ClusterOptions options = two_nodes();
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
        "#SBATCH --ntasks-per-node=1\n", "#SBATCH --output=/shared/state/slurm-%j.out\n",
        "#SBATCH --qos=high\n", "cd '/shared/work' || exit 1\n", "\nwait\n"}) {
    EXPECT_NE(script.find(line), std::string::npos) << line << "\n" << script;
  }
  EXPECT_NE(script.find("run_service 'rollout-1' 'gpu2' 'CUDA_VISIBLE_DEVICES=1' "
                        "'/shared/bin/dice-rollout' '--config' "
                        "'/shared/run.yaml' '--run-id' 'r2' '--worker-index' '1' "
                        "'--metrics-port' '9201' 'run.log_level=debug' &\n"),
            std::string::npos)
      << script;
  EXPECT_NE(script.find("srun --overlap --nodes=1 --ntasks=1 --nodelist=\"$node\""),
            std::string::npos)
      << script;
  int steps = 0;
  for (std::size_t at = script.find("\nrun_service '"); at != std::string::npos;
       at = script.find("\nrun_service '", at + 1)) {
    ++steps;
  }
  EXPECT_EQ(steps, 4);

  std::string dir = make_temp_dir();
  std::ofstream(dir + "/job.sbatch") << script;
  EXPECT_EQ(std::system(("bash -n " + shell_quote(dir + "/job.sbatch")).c_str()), 0);
  EXPECT_TRUE(remove_tree(dir).ok());
}

// Runs the script with bash and an srun test double first on PATH: the services are /bin/true
// (ends at once with 0: not restarted) and /bin/false (fails: restarted until given up).
TEST(SlurmScriptTest, RestartsAFailingStepWithBackoffThenGivesUpAndRecordsEachState) {
  std::string dir = make_temp_dir();
  ClusterOptions options = fast_restarts(two_nodes(), 2);
  std::vector<ServiceSpec> services = learner_and_failing_reward({"/bin/true"});
  std::string state_dir = dir + "/state";
  ASSERT_EQ(run_script_with_srun_double(dir, options, services, state_dir, "r3"), 0)
      << read_file(dir + "/out");

  ServiceState learner, reward;
  ASSERT_TRUE(read_step_file(state_dir + "/steps/learner-0", &learner).ok());
  EXPECT_EQ(learner.state, ServiceRunState::kExited);
  EXPECT_EQ(learner.restarts, 0);
  EXPECT_EQ(learner.last_exit, "exit 0");
  EXPECT_GT(learner.started_at, 1.7e9);
  ASSERT_TRUE(read_step_file(state_dir + "/steps/reward-0", &reward).ok());
  EXPECT_EQ(reward.state, ServiceRunState::kFailed);
  EXPECT_EQ(reward.restarts, 2);
  EXPECT_EQ(reward.last_exit, "exit 1");

  std::string log = read_file(state_dir + "/logs/reward-0.log");
  EXPECT_NE(log.find("starting reward-0 on gpu1 (restarts so far: 0): /bin/false"),
            std::string::npos)
      << log;
  EXPECT_NE(log.find("(restarts so far: 2)"), std::string::npos) << log;
  EXPECT_EQ(log.find("(restarts so far: 3)"), std::string::npos) << log;
  EXPECT_NE(log.find("giving up on reward-0 after 2 restarts (exit 1)"), std::string::npos) << log;
  EXPECT_TRUE(remove_tree(dir).ok());
}

// The only reward service gives up: the script stops the rest of the run (the learner here would
// otherwise sleep on for two minutes) and writes why for `dice-cluster status`.
TEST(SlurmScriptTest, ARoleWithoutServicesStopsTheRun) {
  std::string dir = make_temp_dir();
  ClusterOptions options = fast_restarts(two_nodes(), 1);
  std::vector<ServiceSpec> services = learner_and_failing_reward({"/bin/sleep", "120"});
  std::string state_dir = dir + "/state";
  ASSERT_EQ(run_script_with_srun_double(dir, options, services, state_dir, "r4"), 0)
      << read_file(dir + "/out");

  ServiceState learner, reward;
  ASSERT_TRUE(read_step_file(state_dir + "/steps/learner-0", &learner).ok());
  EXPECT_EQ(learner.state, ServiceRunState::kStopped);
  EXPECT_NE(learner.last_exit, "exit 0");  // ended by the signal, not by sleeping out
  ASSERT_TRUE(read_step_file(state_dir + "/steps/reward-0", &reward).ok());
  EXPECT_EQ(reward.state, ServiceRunState::kFailed);
  const std::string reason = read_file(state_dir + "/steps/.stop_reason");
  EXPECT_NE(reason.find("no reward service left: reward-0 gave up (exit 1); its log: "),
            std::string::npos)
      << reason;
  EXPECT_TRUE(remove_tree(dir).ok());
}

// After a run whose only reward service gave up: reward-0 failed after `restarts` restarts with
// `last_exit`, and the script stopped learner-0 (a sleeper).
void expect_reward_failed_learner_stopped(const std::string& state_dir, int restarts,
                                          const std::string& last_exit) {
  ServiceState learner, reward;
  ASSERT_TRUE(read_step_file(state_dir + "/steps/reward-0", &reward).ok());
  EXPECT_EQ(reward.state, ServiceRunState::kFailed);
  EXPECT_EQ(reward.restarts, restarts);
  EXPECT_EQ(reward.last_exit, last_exit);
  ASSERT_TRUE(read_step_file(state_dir + "/steps/learner-0", &learner).ok());
  EXPECT_EQ(learner.state, ServiceRunState::kStopped);
}

// A service that exits 2 (bad input) would fail the same way again: as under the local supervisor
// it is not restarted, and the run stops saying why, though restarts are left.
TEST(SlurmScriptTest, ExitStatusTwoIsNotRestartedAndStopsTheRun) {
  std::string dir = make_temp_dir();
  std::vector<ServiceSpec> services = learner_and_failing_reward({"/bin/sleep", "120"});
  services[1].executable = "/bin/bash";
  services[1].args = {"-c", "exit 2"};
  std::string state_dir = dir + "/state";
  ASSERT_EQ(
      run_script_with_srun_double(dir, fast_restarts(two_nodes(), 5), services, state_dir, "r7"), 0)
      << read_file(dir + "/out");

  expect_reward_failed_learner_stopped(state_dir, 0, "exit 2");
  const std::string log = read_file(state_dir + "/logs/reward-0.log");
  EXPECT_NE(log.find("reward-0 exited with status 2 (bad input), not restarted"), std::string::npos)
      << log;
  EXPECT_EQ(log.find("(restarts so far: 1)"), std::string::npos) << log;
  const std::string reason = read_file(state_dir + "/steps/.stop_reason");
  EXPECT_NE(reason.find("reward-0 exited with status 2 (bad input: a missing or invalid file or "
                        "setting), not restarted; its log: " +
                        state_dir + "/logs/reward-0.log"),
            std::string::npos)
      << reason;
  EXPECT_TRUE(remove_tree(dir).ok());
}

// Exit 3 (no disk space) is not restarted either: each restart would redo a step and fill the
// same disk.
TEST(SlurmScriptTest, ExitStatusThreeIsNotRestartedAndStopsTheRun) {
  std::string dir = make_temp_dir();
  std::vector<ServiceSpec> services = learner_and_failing_reward({"/bin/sleep", "120"});
  services[1].executable = "/bin/bash";
  services[1].args = {"-c", "exit 3"};
  std::string state_dir = dir + "/state";
  ASSERT_EQ(
      run_script_with_srun_double(dir, fast_restarts(two_nodes(), 5), services, state_dir, "r8"), 0)
      << read_file(dir + "/out");

  expect_reward_failed_learner_stopped(state_dir, 0, "exit 3");
  const std::string log = read_file(state_dir + "/logs/reward-0.log");
  EXPECT_NE(log.find("reward-0 exited with status 3 (no disk space), not restarted"),
            std::string::npos)
      << log;
  EXPECT_EQ(log.find("(restarts so far: 1)"), std::string::npos) << log;
  const std::string reason = read_file(state_dir + "/steps/.stop_reason");
  EXPECT_NE(reason.find("reward-0 exited with status 3 (no disk space: a write it must make did "
                        "not fit; free space, then resume), not restarted"),
            std::string::npos)
      << reason;
}

// Exit 4 (no GPU or toolchain on the node) is not restarted either, and the reason names the
// node's want of a device, not a disk.
TEST(SlurmScriptTest, ExitStatusFourIsNotRestartedAndNamesTheDevice) {
  std::string dir = make_temp_dir();
  std::vector<ServiceSpec> services = learner_and_failing_reward({"/bin/sleep", "120"});
  services[1].executable = "/bin/bash";
  services[1].args = {"-c", "exit 4"};
  std::string state_dir = dir + "/state";
  ASSERT_EQ(
      run_script_with_srun_double(dir, fast_restarts(two_nodes(), 5), services, state_dir, "r9"), 0)
      << read_file(dir + "/out");

  expect_reward_failed_learner_stopped(state_dir, 0, "exit 4");
  const std::string log = read_file(state_dir + "/logs/reward-0.log");
  EXPECT_NE(log.find("reward-0 exited with status 4 (no device), not restarted"), std::string::npos)
      << log;
  EXPECT_EQ(log.find("(restarts so far: 1)"), std::string::npos) << log;
  const std::string reason = read_file(state_dir + "/steps/.stop_reason");
  EXPECT_NE(reason.find("reward-0 exited with status 4 (no device: its node has no GPU or "
                        "toolchain it needs"),
            std::string::npos)
      << reason;
  EXPECT_EQ(reason.find("disk"), std::string::npos) << reason;
  EXPECT_TRUE(remove_tree(dir).ok());
}

// A failure that recurs slower than the rate limit (here: a window no restart leaves) is still
// given up after cluster.local.max_restarts_per_run restarts, and the run stops with the reason.
TEST(SlurmScriptTest, RestartsAreCappedPerRun) {
  std::string dir = make_temp_dir();
  ClusterOptions options = fast_restarts(two_nodes(), 100);
  options.local.max_restarts_per_run = 3;
  std::vector<ServiceSpec> services = learner_and_failing_reward({"/bin/sleep", "120"});
  std::string state_dir = dir + "/state";
  ASSERT_EQ(run_script_with_srun_double(dir, options, services, state_dir, "r8"), 0)
      << read_file(dir + "/out");

  expect_reward_failed_learner_stopped(state_dir, 3, "exit 1");
  const std::string log = read_file(state_dir + "/logs/reward-0.log");
  EXPECT_NE(log.find("giving up on reward-0 after 3 restarts in this run (exit 1)"),
            std::string::npos)
      << log;
  const std::string reason = read_file(state_dir + "/steps/.stop_reason");
  EXPECT_NE(reason.find("no reward service left: reward-0 gave up (exit 1 after 3 restarts in "
                        "this run (cluster.local.max_restarts_per_run))"),
            std::string::npos)
      << reason;
  EXPECT_TRUE(remove_tree(dir).ok());
}

// dice-dash beside a learner that finishes: once the learner's loop ends the script stops the
// dashboard (it would serve until the time limit otherwise) and the job ends.
TEST(SlurmScriptTest, TheDashboardIsStoppedWhenTheRunEnds) {
  std::string dir = make_temp_dir();
  std::vector<ServiceSpec> services = learner_and_failing_reward({"/bin/sleep", "0.2"});
  services[1].name = "dash-0";
  services[1].executable = "/bin/sleep";
  services[1].args = {"120"};
  services[1].dashboard = true;
  std::string state_dir = dir + "/state";
  const auto started = std::chrono::steady_clock::now();
  ASSERT_EQ(
      run_script_with_srun_double(dir, fast_restarts(two_nodes(), 1), services, state_dir, "r5"), 0)
      << read_file(dir + "/out");
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(60));
  ServiceState learner, dash;
  ASSERT_TRUE(read_step_file(state_dir + "/steps/learner-0", &learner).ok());
  EXPECT_EQ(learner.state, ServiceRunState::kExited);
  ASSERT_TRUE(read_step_file(state_dir + "/steps/dash-0", &dash).ok());
  EXPECT_EQ(dash.state, ServiceRunState::kStopped);
  EXPECT_TRUE(remove_tree(dir).ok());
}

// A dashboard that gives up is not a role the run needs: the learner runs on to its end.
TEST(SlurmScriptTest, ADashboardThatGivesUpDoesNotStopTheRun) {
  std::string dir = make_temp_dir();
  std::vector<ServiceSpec> services = learner_and_failing_reward({"/bin/sleep", "1"});
  services[1].name = "dash-0";
  services[1].dashboard = true;  // /bin/false: fails every time
  std::string state_dir = dir + "/state";
  ASSERT_EQ(
      run_script_with_srun_double(dir, fast_restarts(two_nodes(), 1), services, state_dir, "r6"), 0)
      << read_file(dir + "/out");
  ServiceState learner, dash;
  ASSERT_TRUE(read_step_file(state_dir + "/steps/dash-0", &dash).ok());
  EXPECT_EQ(dash.state, ServiceRunState::kFailed);
  ASSERT_TRUE(read_step_file(state_dir + "/steps/learner-0", &learner).ok());
  EXPECT_EQ(learner.state, ServiceRunState::kExited);
  EXPECT_EQ(learner.last_exit, "exit 0");
  EXPECT_FALSE(std::filesystem::exists(state_dir + "/steps/.stop_reason"));
  EXPECT_TRUE(remove_tree(dir).ok());
}

}  // namespace
}  // namespace dice::cluster
