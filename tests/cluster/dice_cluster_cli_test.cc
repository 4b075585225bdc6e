// Integration tests of dice-cluster's local backend with real processes: the services are test
// doubles (tests/cluster/*_test_double.cc). Every process of a run carries a unique environment
// token, so "no process of the run remains" is checked by scanning /proc/*/environ for it.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>

#include "cluster/cluster_state.h"
#include "cluster/process.h"
#include "common/remove_tree.h"
#include "tests/cluster/cli_test_support.h"
#include "tests/support/free_port.h"
#include "tests/support/http_get.h"

namespace dice::cluster {
namespace {

using cli_test::kSleepy;

constexpr const char* kCrashing = "crashing_service_test_double";
constexpr const char* kBadInput = "bad_input_service_test_double";         // exits 2
constexpr const char* kNoDiskSpace = "no_disk_space_service_test_double";  // exits 3
constexpr const char* kNoDevice = "no_device_service_test_double";         // exits 4
constexpr const char* kStubborn = "sigterm_ignoring_service_test_double";

using cli_test::CliResult;
using cli_test::poll_until;
using cli_test::processes_with_token;

class DiceClusterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = cli_test::make_temp_dir("dice_cluster");
    state_dir_ = dir_ + "/state";
    // mkdtemp made the folder name unique among live tests.
    token_ = std::to_string(getpid()) + "-" + std::filesystem::path(dir_).filename().string();
  }
  void TearDown() override {
    // Leave nothing behind even when a test failed half-way.
    if (std::filesystem::exists(state_dir_ + "/state.yaml")) (void)down();
    for (pid_t pid : processes_with_token(token_)) kill(pid, SIGKILL);
    EXPECT_TRUE(remove_tree(dir_).ok());
  }

  std::vector<std::string> up_args(const std::string& reward_exe,
                                   std::vector<std::string> extra = {}) {
    std::vector<std::string> args = {
        "up",
        std::string(DICE_SOURCE_DIR) + "/configs/local.yaml",
        "run.id=test-" + token_,
    };
    for (auto& a : cli_test::test_double_overrides(state_dir_, DICE_TEST_DOUBLE_DIR, reward_exe)) {
      args.push_back(std::move(a));
    }
    args.insert(args.end(), extra.begin(), extra.end());
    return args;
  }
  CliResult cli(const std::vector<std::string>& args) {
    return cli_test::run_cli(DICE_CLUSTER_EXE, args, token_, dir_ + "/out.txt");
  }
  CliResult down() { return cli({"down", "--state-dir", state_dir_}); }
  bool doubles_handle_signals() {
    return cli_test::wait_until_doubles_handle_signals(
        [&](const std::vector<std::string>& args) { return cli(args); }, state_dir_);
  }
  ClusterState state() { return cli_test::read_state(state_dir_); }
  // The state once the supervisor has stopped the run by itself (or after 15 s).
  ClusterState stopped_state() {
    ClusterState s;
    EXPECT_TRUE(poll_until([&] {
      s = state();
      return s.supervisor_state == "stopped";
    })) << cli({"status", "--state-dir", state_dir_}).output;
    return s;
  }
  const ServiceState* service(const ClusterState& s, const std::string& name) {
    return cli_test::find_service(s, name);
  }

  std::string dir_, state_dir_, token_;
};

TEST_F(DiceClusterTest, UpRestartsAKilledServiceAndDownLeavesNoProcess) {
  CliResult up = cli(up_args(kSleepy));
  ASSERT_EQ(up.rc, 0) << up.output;
  EXPECT_NE(up.output.find(state_dir_), std::string::npos) << up.output;

  ClusterState s = state();
  ASSERT_EQ(s.services.size(), 3u);
  EXPECT_EQ(s.supervisor_state, "running");
  EXPECT_TRUE(process_alive(s.supervisor_pid, s.supervisor_start_ticks));
  for (const auto& entry : s.services) {
    EXPECT_EQ(entry.state, ServiceRunState::kRunning) << entry.name;
    EXPECT_TRUE(process_alive(entry.pid, entry.start_ticks)) << entry.name;
  }
  // The supervisor and its three services: four processes of this run. Polled: a CI run once
  // found 3 at 125 ms, its state file saying all three services ran (likely one still inside its
  // exec, whose /proc environ reads empty then).
  EXPECT_TRUE(poll_until([&] { return processes_with_token(token_).size() == 4u; }))
      << processes_with_token(token_).size() << " processes of this run";

  CliResult status = cli({"status", "--state-dir", state_dir_});
  ASSERT_EQ(status.rc, 0) << status.output;
  for (const char* name : {"learner-0", "rollout-0", "reward-0"}) {
    std::string row = status.output.substr(status.output.find(name));
    row = row.substr(0, row.find('\n'));
    EXPECT_NE(row.find("running"), std::string::npos) << row;
  }

  // Each service got the run's command line.
  CliResult logs = cli({"logs", "rollout", "--state-dir", state_dir_});
  ASSERT_EQ(logs.rc, 0) << logs.output;
  EXPECT_NE(logs.output.find("--run-id test-" + token_ + " --worker-index 0"), std::string::npos)
      << logs.output;
  EXPECT_EQ(logs.output.find("learner-0.log"), std::string::npos) << logs.output;

  // A second up on the same state dir is refused while the run is up.
  CliResult again = cli(up_args(kSleepy));
  EXPECT_EQ(again.rc, 1) << again.output;
  EXPECT_NE(again.output.find("already up"), std::string::npos) << again.output;

  // SIGKILL a service: the supervisor restarts it.
  const ServiceState* rollout = service(s, "rollout-0");
  ASSERT_NE(rollout, nullptr);
  pid_t killed = rollout->pid;
  ASSERT_EQ(kill(killed, SIGKILL), 0);
  ClusterState after;
  ASSERT_TRUE(poll_until([&] {
    after = state();
    const ServiceState* r = service(after, "rollout-0");
    return r != nullptr && r->restarts == 1 && r->state == ServiceRunState::kRunning;
  })) << cli({"status", "--state-dir", state_dir_}).output;
  const ServiceState* restarted = service(after, "rollout-0");
  EXPECT_NE(restarted->pid, killed);
  EXPECT_EQ(restarted->last_exit, "killed by signal 9");
  EXPECT_TRUE(process_alive(restarted->pid, restarted->start_ticks));
  status = cli({"status", "--state-dir", state_dir_});
  EXPECT_NE(status.output.find("killed by signal 9"), std::string::npos) << status.output;

  ASSERT_TRUE(doubles_handle_signals());
  CliResult stopped = down();
  ASSERT_EQ(stopped.rc, 0) << stopped.output;
  EXPECT_TRUE(processes_with_token(token_).empty());
  ClusterState final_state = state();
  EXPECT_EQ(final_state.supervisor_state, "stopped");
  for (const auto& entry : final_state.services) {
    EXPECT_EQ(entry.state, ServiceRunState::kStopped) << entry.name;
    EXPECT_EQ(entry.last_exit, "exit 0") << entry.name;  // the doubles exit 0 on SIGTERM
  }
  EXPECT_FALSE(process_alive(restarted->pid, restarted->start_ticks));
}

TEST_F(DiceClusterTest, CrashingServiceIsGivenUpAfterMaxRestarts) {
  CliResult up = cli(up_args(kCrashing, {"cluster.local.max_restarts=2"}));
  ASSERT_EQ(up.rc, 0) << up.output;
  ClusterState s;
  ASSERT_TRUE(poll_until([&] {
    s = state();
    const ServiceState* r = service(s, "reward-0");
    return r != nullptr && r->state == ServiceRunState::kFailed;
  })) << cli({"status", "--state-dir", state_dir_}).output;
  const ServiceState* reward = service(s, "reward-0");
  EXPECT_EQ(reward->restarts, 2);
  EXPECT_EQ(reward->last_exit, "exit 1");

  // reward-0 was the run's only reward worker: the supervisor stops the run and says why,
  // instead of leaving the learner waiting for verdicts that cannot come.
  ASSERT_TRUE(poll_until([&] {
    s = state();
    return s.supervisor_state == "stopped";
  })) << cli({"status", "--state-dir", state_dir_}).output;
  EXPECT_EQ(service(s, "learner-0")->state, ServiceRunState::kStopped);
  EXPECT_NE(s.stop_reason.find("no reward service left: reward-0 gave up (exit 1)"),
            std::string::npos)
      << s.stop_reason;
  CliResult logs = cli({"logs", "supervisor", "--state-dir", state_dir_});
  EXPECT_NE(logs.output.find("giving up on service"), std::string::npos) << logs.output;
  EXPECT_NE(logs.output.find("service=reward-0"), std::string::npos) << logs.output;
  CliResult status = cli({"status", "--state-dir", state_dir_});
  EXPECT_NE(status.output.find("failed"), std::string::npos) << status.output;
  EXPECT_NE(status.output.find("stopped by the supervisor: no reward service left"),
            std::string::npos)
      << status.output;
  CliResult waited = cli({"wait", "--timeout", "30", "--state-dir", state_dir_});
  EXPECT_EQ(waited.rc, 1) << waited.output;
  EXPECT_NE(waited.output.find("the run was stopped: no reward service left"), std::string::npos)
      << waited.output;

  CliResult stopped = down();
  ASSERT_EQ(stopped.rc, 0) << stopped.output;
  EXPECT_TRUE(processes_with_token(token_).empty());
}

// The run's reward worker ended with exit `status`, was not restarted, and the run stopped with a
// reason that starts with `reason`.
void expect_stopped_without_restart(const ClusterState& s, int status, const std::string& reason) {
  ASSERT_EQ(s.supervisor_state, "stopped");
  const ServiceState* reward = cli_test::find_service(s, "reward-0");
  EXPECT_EQ(reward->state, ServiceRunState::kFailed);
  EXPECT_EQ(reward->restarts, 0);
  EXPECT_EQ(reward->last_exit, "exit " + std::to_string(status));
  EXPECT_NE(
      s.stop_reason.find("reward-0 exited with status " + std::to_string(status) + " (" + reason),
      std::string::npos)
      << s.stop_reason;
}

// Exit 2 is a service's "bad input" (a missing or invalid file or setting): started again it fails
// the same way, so the supervisor drains the run at once and says why.
TEST_F(DiceClusterTest, ServiceExitingWithBadInputIsNotRestartedAndTheRunDrains) {
  ASSERT_EQ(cli(up_args(kBadInput)).rc, 0);
  const ClusterState s = stopped_state();
  expect_stopped_without_restart(s, 2, "bad input");
  EXPECT_EQ(service(s, "learner-0")->state, ServiceRunState::kStopped);
  CliResult waited = cli({"wait", "--timeout", "30", "--state-dir", state_dir_});
  EXPECT_EQ(waited.rc, 1) << waited.output;
  EXPECT_NE(waited.output.find("bad input"), std::string::npos) << waited.output;
  ASSERT_EQ(down().rc, 0);
  EXPECT_TRUE(processes_with_token(token_).empty());
}

// Exit 3 is a service's "no disk space" (common/exit_codes.h): a restart would meet the same disk,
// so the supervisor drains the run at once and says why instead of restarting into a loop.
TEST_F(DiceClusterTest, ServiceExitingForWantOfDiskSpaceIsNotRestartedAndTheRunDrains) {
  ASSERT_EQ(cli(up_args(kNoDiskSpace)).rc, 0);
  expect_stopped_without_restart(stopped_state(), 3, "no disk space");
  ASSERT_EQ(down().rc, 0);
  EXPECT_TRUE(processes_with_token(token_).empty());
}

// A worker whose node has no GPU or toolchain (kExitNoDevice) is not restarted, and the run's
// reason says so: it once shared exit 3 with a full disk, and the reason sent operators to free
// space on a node that lacked a GPU.
TEST_F(DiceClusterTest, ServiceExitingForWantOfADeviceIsNotRestartedAndTheReasonSaysSo) {
  ASSERT_EQ(cli(up_args(kNoDevice)).rc, 0);
  const ClusterState s = stopped_state();
  expect_stopped_without_restart(s, 4, "no device");
  EXPECT_EQ(s.stop_reason.find("disk"), std::string::npos) << s.stop_reason;
  ASSERT_EQ(down().rc, 0);
  EXPECT_TRUE(processes_with_token(token_).empty());
}

// The rate limit (max_restarts in restart_window_s) never stops a failure that recurs more slowly
// than it; max_restarts_per_run does.
TEST_F(DiceClusterTest, RestartsAreCappedPerRunBesideTheRate) {
  CliResult up = cli(
      up_args(kCrashing, {"cluster.local.max_restarts=1000", "cluster.local.max_restarts_per_run=3",
                          "cluster.local.restart_backoff_max_ms=20"}));
  ASSERT_EQ(up.rc, 0) << up.output;
  ClusterState s = stopped_state();
  ASSERT_EQ(s.supervisor_state, "stopped");
  const ServiceState* reward = service(s, "reward-0");
  EXPECT_EQ(reward->state, ServiceRunState::kFailed);
  EXPECT_EQ(reward->restarts, 3);
  EXPECT_NE(s.stop_reason.find("after 3 restarts in this run"), std::string::npos) << s.stop_reason;
  CliResult logs = cli({"logs", "supervisor", "--state-dir", state_dir_});
  EXPECT_NE(logs.output.find("too many restarts in this run"), std::string::npos) << logs.output;
  ASSERT_EQ(down().rc, 0);
  EXPECT_TRUE(processes_with_token(token_).empty());
}

// `wait` follows the learner's log until it exits: 0 when it finished, 1 when it failed.
TEST_F(DiceClusterTest, WaitFollowsTheLearnerUntilItEnds) {
  const std::string finishing =
      std::string("cluster.local.executables={learner: finishing_service_test_double, rollout: ") +
      kSleepy + ", reward: " + kSleepy + "}";
  ASSERT_EQ(cli(up_args(kSleepy, {finishing})).rc, 0);
  CliResult waited = cli({"wait", "--timeout", "60", "--state-dir", state_dir_});
  EXPECT_EQ(waited.rc, 0) << waited.output;
  EXPECT_NE(waited.output.find("step 1/2 of phase test"), std::string::npos) << waited.output;
  EXPECT_NE(waited.output.find("learner done steps=2"), std::string::npos) << waited.output;
  ASSERT_EQ(down().rc, 0);

  const std::string crashing = std::string("cluster.local.executables={learner: ") + kCrashing +
                               ", rollout: " + kSleepy + ", reward: " + kSleepy + "}";
  ASSERT_EQ(cli(up_args(kSleepy, {crashing, "cluster.local.max_restarts=1"})).rc, 0);
  waited = cli({"wait", "--timeout", "60", "--state-dir", state_dir_});
  EXPECT_EQ(waited.rc, 1) << waited.output;
  EXPECT_NE(waited.output.find("ended failed"), std::string::npos) << waited.output;
  ASSERT_EQ(down().rc, 0);
  EXPECT_EQ(cli({"wait", "--timeout", "0", "--state-dir", state_dir_}).rc, 2);
}

TEST_F(DiceClusterTest, DownKillsAServiceThatIgnoresSigtermAfterTheDrainTimeout) {
  ASSERT_EQ(cli(up_args(kStubborn, {"cluster.local.drain_timeout_ms=300"})).rc, 0);
  ASSERT_TRUE(doubles_handle_signals());
  auto started = std::chrono::steady_clock::now();
  CliResult stopped = down();
  double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  ASSERT_EQ(stopped.rc, 0) << stopped.output;
  EXPECT_GE(took, 0.3);  // the stubborn service had its drain time
  EXPECT_TRUE(processes_with_token(token_).empty());
  ClusterState s = state();
  EXPECT_EQ(service(s, "reward-0")->last_exit, "killed by signal 9");
  EXPECT_EQ(service(s, "learner-0")->last_exit, "exit 0");
  CliResult logs = cli({"logs", "supervisor", "--state-dir", state_dir_});
  EXPECT_NE(logs.output.find("still running after the drain timeout"), std::string::npos)
      << logs.output;
}

TEST_F(DiceClusterTest, KilledSupervisorLeavesNoOrphansAfterDown) {
  ASSERT_EQ(cli(up_args(kSleepy)).rc, 0);
  ClusterState s = state();
  ASSERT_EQ(kill(s.supervisor_pid, SIGKILL), 0);
  CliResult stopped = down();
  EXPECT_EQ(stopped.rc, 0) << stopped.output;
  EXPECT_TRUE(processes_with_token(token_).empty());
  CliResult status = cli({"status", "--state-dir", state_dir_});
  EXPECT_NE(status.output.find("not running"), std::string::npos) << status.output;
}

TEST_F(DiceClusterTest, BadInputExitsTwoWithAClearMessage) {
  CliResult r = cli({"launch"});
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.output.find("unknown command 'launch'"), std::string::npos) << r.output;

  r = cli({"up", dir_ + "/missing.yaml"});
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.output.find(dir_ + "/missing.yaml"), std::string::npos) << r.output;

  std::vector<std::string> args = up_args(kSleepy, {"cluster.local.max_restart=3"});
  r = cli(args);
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.output.find("cluster.local.max_restart"), std::string::npos) << r.output;

  args = up_args("no_such_service_test_double");
  r = cli(args);
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.output.find("no_such_service_test_double"), std::string::npos) << r.output;

  r = cli({"status"});
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.output.find("--state-dir"), std::string::npos) << r.output;

  r = cli({"status", "--state-dir", dir_ + "/nothing"});
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.output.find(dir_ + "/nothing/state.yaml"), std::string::npos) << r.output;

  r = cli({"logs", "-n", "x", "--state-dir", state_dir_});
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.output.find("-n expects"), std::string::npos) << r.output;

  EXPECT_TRUE(processes_with_token(token_).empty());
}

TEST_F(DiceClusterTest, DryRunPrintsCommandsAndStartsNothing) {
  std::vector<std::string> args = up_args(kSleepy, {"--dry-run"});
  CliResult r = cli(args);
  ASSERT_EQ(r.rc, 0) << r.output;
  EXPECT_NE(r.output.find("rollout-0: '" DICE_TEST_DOUBLE_DIR "/sleepy_service_test_double' "
                          "'--config'"),
            std::string::npos)
      << r.output;
  EXPECT_FALSE(std::filesystem::exists(state_dir_));

  args = up_args(kSleepy, {"cluster.backend=slurm", "cluster.slurm.partition=gpu", "--dry-run"});
  r = cli(args);
  ASSERT_EQ(r.rc, 0) << r.output;
  EXPECT_NE(r.output.find("#SBATCH --partition=gpu"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find(
                "run_service 'reward-0' 'localhost' 'CUDA_VISIBLE_DEVICES=0' '" DICE_TEST_DOUBLE_DIR
                "/sleepy_service_test_double'"),
            std::string::npos)
      << r.output;

  // ssh: each service's ssh client, whose remote command runs the executable found here.
  args =
      up_args(kSleepy, {"cluster.backend=ssh", "cluster.ssh.extra_args=[-p, 2222]", "--dry-run"});
  r = cli(args);
  ASSERT_EQ(r.rc, 0) << r.output;
  std::string rollout = r.output.substr(r.output.find("rollout-0: "));
  rollout = rollout.substr(0, rollout.find("\nreward-0: "));
  EXPECT_NE(rollout.find("ssh' '-p' '2222' '-T' '-o' 'BatchMode=yes'"), std::string::npos)
      << rollout;
  EXPECT_NE(rollout.find("'localhost' 'sh -c "), std::string::npos) << rollout;
  EXPECT_NE(rollout.find(DICE_TEST_DOUBLE_DIR "/sleepy_service_test_double"), std::string::npos)
      << rollout;
  EXPECT_FALSE(std::filesystem::exists(state_dir_));
  EXPECT_TRUE(processes_with_token(token_).empty());
}

TEST_F(DiceClusterTest, UpStartsTheDashboardBesideTheRunAndPrintsItsAddress) {
  const int port = testing_util::free_port();
  const std::string log = dir_ + "/reward_log";  // the sleepy learner never creates it
  const std::vector<std::string> dash = {"cluster.dash.enabled=true",
                                         "cluster.dash.port=" + std::to_string(port),
                                         "run.reward_log_path=" + log};
  CliResult dry = cli(up_args(kSleepy, {dash[0], dash[1], dash[2], "--dry-run"}));
  ASSERT_EQ(dry.rc, 0) << dry.output;
  EXPECT_NE(dry.output.find("dash-0: "), std::string::npos) << dry.output;
  EXPECT_NE(dry.output.find("dice-dash' '--bind' '127.0.0.1' '--port' '" + std::to_string(port) +
                            "' '" + log + "'"),
            std::string::npos)
      << dry.output;

  CliResult up = cli(up_args(kSleepy, dash));
  ASSERT_EQ(up.rc, 0) << up.output;
  EXPECT_NE(up.output.find("dashboard: http://127.0.0.1:" + std::to_string(port) + "/"),
            std::string::npos)
      << up.output;
  const ClusterState after_up = state();  // kept: `entry` points into it
  const ServiceState* entry = service(after_up, "dash-0");
  ASSERT_NE(entry, nullptr);
  EXPECT_EQ(entry->role, "dash");
  // It serves the run's log (missing until the learner writes it) as soon as it listens.
  const testing_util::HttpResult runs = cli_test::dashboard_runs(port);
  EXPECT_EQ(runs.status, 200) << cli({"logs", "dash", "--state-dir", state_dir_}).output;
  EXPECT_NE(runs.body.find("\"state\":\"missing\""), std::string::npos) << runs.body;

  // dice-dash handles SIGTERM from its start; the test doubles once they log their arguments.
  EXPECT_TRUE(poll_until([&] {
    for (const char* name : {"learner-0", "rollout-0", "reward-0"}) {
      if (cli({"logs", name, "--state-dir", state_dir_}).output.find(" args:") ==
          std::string::npos) {
        return false;
      }
    }
    return true;
  }));
  CliResult stopped = down();
  ASSERT_EQ(stopped.rc, 0) << stopped.output;
  EXPECT_TRUE(processes_with_token(token_).empty());
  EXPECT_EQ(testing_util::http_get(port, "/api/runs").status, 0) << "dice-dash still answers";
}

// The ssh and slurm backends plan it too, on the learner's node: an ssh client whose remote
// command runs dice-dash, or a step of the batch script that the run does not wait for.
TEST_F(DiceClusterTest, DryRunOfSshAndSlurmPlansTheDashboardOnTheLearnersNode) {
  const std::vector<std::string> dash = {"cluster.dash.enabled=true", "cluster.dash.port=18470",
                                         "run.reward_log_path=" + dir_ + "/reward_log",
                                         "cluster.learner.port=18400", "--dry-run"};
  const std::string nodes =
      "cluster.nodes=[{host: gpu1, roles: [learner, reward], gpus: {learner: [0], reward: [1]}}, "
      "{host: gpu2, roles: [rollout], gpus: {rollout: [0]}}]";
  std::vector<std::string> ssh_args = dash;
  ssh_args.insert(ssh_args.end(),
                  {"cluster.backend=ssh", nodes, "cluster.transport.bind_address=0.0.0.0"});
  CliResult ssh = cli(up_args(kSleepy, ssh_args));
  ASSERT_EQ(ssh.rc, 0) << ssh.output;
  const std::size_t at = ssh.output.find("dash-0: ");
  ASSERT_NE(at, std::string::npos) << ssh.output;
  // The dashboard is planned last; its remote command spans lines.
  const std::string line = ssh.output.substr(at);
  EXPECT_NE(line.find("ssh' "), std::string::npos) << line;
  EXPECT_NE(line.find("'gpu1' 'sh -c"), std::string::npos) << line;
  EXPECT_EQ(line.find("gpu2"), std::string::npos) << line;
  EXPECT_NE(line.find("/dice-dash"), std::string::npos) << line;

  std::vector<std::string> slurm_args = dash;
  slurm_args.insert(slurm_args.end(), {"cluster.backend=slurm", "cluster.slurm.partition=gpu",
                                       nodes, "cluster.transport.bind_address=0.0.0.0"});
  CliResult slurm = cli(up_args(kSleepy, slurm_args));
  ASSERT_EQ(slurm.rc, 0) << slurm.output;
  EXPECT_NE(slurm.output.find("run_service 'dash-0' 'gpu1' '"), std::string::npos) << slurm.output;
  EXPECT_NE(slurm.output.find("wait \"${run_pids[@]}\""), std::string::npos) << slurm.output;
}

TEST_F(DiceClusterTest, LogsOfAnUnknownServiceListsTheServices) {
  ASSERT_EQ(cli(up_args(kSleepy)).rc, 0);
  CliResult r = cli({"logs", "trainer-0", "--state-dir", state_dir_});
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.output.find("no service 'trainer-0'"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("rollout-0"), std::string::npos) << r.output;
  CliResult stopped = down();
  ASSERT_EQ(stopped.rc, 0) << stopped.output;
  EXPECT_TRUE(processes_with_token(token_).empty());
}

}  // namespace
}  // namespace dice::cluster
