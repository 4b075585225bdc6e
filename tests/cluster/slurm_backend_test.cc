// Integration test of dice-cluster's slurm backend against a real one-node Slurm (Debian's
// slurm-wlm), started privately for this test by tests/cluster/one_node_slurm.sh: its own munged,
// slurm.conf, free ports and folders under a temp dir, so it touches no system Slurm and no other
// test. The services are the test doubles (tests/cluster/*_test_double.cc). Skips when not root or
// when slurm-wlm / munge are not installed; a Slurm that is installed but does not come up fails.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>

#include "cluster/cluster_state.h"
#include "cluster/command.h"
#include "cluster/slurm_query.h"
#include "common/remove_tree.h"
#include "tests/cluster/cli_test_support.h"
#include "tests/support/free_port.h"
#include "tests/support/http_get.h"

namespace dice::cluster {
namespace {

using testing_util::free_port;

using cli_test::CliResult;
using cli_test::poll_until;
using cli_test::processes_with_token;

constexpr const char* kSleepy = "sleepy_service_test_double";
constexpr const char* kSlurmScript = DICE_SOURCE_DIR "/tests/cluster/one_node_slurm.sh";

std::string short_hostname() {
  char name[256] = {};
  gethostname(name, sizeof(name) - 1);
  std::string host = name;
  return host.substr(0, host.find('.'));
}

class SlurmBackendTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (geteuid() != 0) {
      skip_reason_ = "needs root: the one-node test Slurm runs slurmctld and slurmd as root";
      return;
    }
    for (const char* tool :
         {"munged", "slurmctld", "slurmd", "sbatch", "squeue", "scancel", "srun", "sinfo"}) {
      // The daemons are in /usr/sbin, not always on a root shell's PATH (the script adds it).
      if (find_on_path(tool).empty() && find_on_path(std::string("/usr/sbin/") + tool).empty()) {
        skip_reason_ = std::string(tool) +
                       " not on PATH: install slurm-wlm and munge (tools/setup does) to run the "
                       "Slurm backend test";
        return;
      }
    }
    slurm_dir_ = cli_test::make_temp_dir("dice_slurm");
    int ctld_port = free_port(), slurmd_port = free_port();
    while (slurmd_port == ctld_port) slurmd_port = free_port();
    std::string command = "bash " + cli_test::quote(kSlurmScript) + " start " +
                          cli_test::quote(slurm_dir_ + "/slurm") + " " + std::to_string(ctld_port) +
                          " " + std::to_string(slurmd_port) + " " + std::to_string(getpid()) +
                          " >" + cli_test::quote(slurm_dir_ + "/start.out") + " 2>&1";
    if (std::system(command.c_str()) != 0) {
      start_error_ =
          "the one-node Slurm did not start:\n" + cli_test::read_file(slurm_dir_ + "/start.out");
      return;
    }
    slurm_conf_ = slurm_dir_ + "/slurm/slurm.conf";
    setenv("SLURM_CONF", slurm_conf_.c_str(), 1);  // for this process's own squeue queries
  }

  static void TearDownTestSuite() {
    if (slurm_dir_.empty()) return;
    std::string command = "bash " + cli_test::quote(kSlurmScript) + " stop " +
                          cli_test::quote(slurm_dir_ + "/slurm") + " >/dev/null 2>&1";
    (void)std::system(command.c_str());
    EXPECT_TRUE(remove_tree(slurm_dir_).ok());
  }

  void SetUp() override {
    if (!skip_reason_.empty()) GTEST_SKIP() << skip_reason_;
    ASSERT_TRUE(start_error_.empty()) << start_error_;
    dir_ = cli_test::make_temp_dir("dice_slurm_run");
    state_dir_ = dir_ + "/state";
    token_ = std::to_string(getpid()) + "-" + std::filesystem::path(dir_).filename().string();
  }

  void TearDown() override {
    if (dir_.empty()) return;
    // Leave no job and no process behind even when the test failed half-way.
    if (std::filesystem::exists(state_dir_ + "/state.yaml")) (void)down();
    for (pid_t pid : processes_with_token(token_)) kill(pid, SIGKILL);
    EXPECT_TRUE(remove_tree(dir_).ok());
  }

  // Fresh ports, so a local-backend test running beside this one cannot collide with it.
  std::vector<std::string> up_args(std::vector<std::string> extra = {}) {
    std::vector<std::string> args = {
        "up",
        std::string(DICE_SOURCE_DIR) + "/configs/local.yaml",
        "run.id=slurm-" + token_,
        "cluster.backend=slurm",
        "cluster.slurm.partition=dicetest",
        "cluster.slurm.down_timeout_s=60",
        "cluster.local.state_dir=" + state_dir_,
        "cluster.local.bin_dir=" DICE_TEST_DOUBLE_DIR,
        "cluster.local.start_timeout_ms=30000",
        "cluster.local.restart_backoff_ms=20",
        std::string("cluster.local.executables={learner: ") + kSleepy + ", rollout: " + kSleepy +
            ", reward: " + kSleepy + "}",
        "cluster.nodes=[{host: " + short_hostname() +
            ", roles: [learner, rollout, reward], gpus: {learner: [0], rollout: [0, 1], "
            "reward: [0]}}]",
        "cluster.learner.port=" + std::to_string(learner_port_),
        "cluster.learner.metrics_port=" + std::to_string(learner_port_ + 2),
        "cluster.worker_metrics.rollout_base_port=" + std::to_string(learner_port_ + 10),
        "cluster.worker_metrics.reward_base_port=" + std::to_string(learner_port_ + 20),
    };
    args.insert(args.end(), extra.begin(), extra.end());
    return args;
  }
  CliResult cli(const std::vector<std::string>& args, const std::vector<std::string>& env = {}) {
    std::vector<std::string> full_env = {"SLURM_CONF=" + slurm_conf_};
    full_env.insert(full_env.end(), env.begin(), env.end());
    return cli_test::run_cli(DICE_CLUSTER_EXE, args, token_, dir_ + "/out.txt", full_env);
  }
  CliResult down() { return cli({"down", "--state-dir", state_dir_}); }
  ClusterState state() { return cli_test::read_state(state_dir_); }
  // The live service process whose command line holds `needle`; 0 if none.
  pid_t service_pid(const std::string& needle) {
    for (pid_t pid : processes_with_token(token_)) {
      std::string line = cli_test::process_command_line(pid);
      if (line.find(kSleepy) != std::string::npos && line.find(needle) != std::string::npos &&
          line.find("srun") == std::string::npos) {
        return pid;
      }
    }
    return 0;
  }

  static std::string skip_reason_, start_error_, slurm_dir_, slurm_conf_;
  std::string dir_, state_dir_, token_;
  int learner_port_ = 20000 + getpid() % 20000;
};

std::string SlurmBackendTest::skip_reason_;
std::string SlurmBackendTest::start_error_;
std::string SlurmBackendTest::slurm_dir_;
std::string SlurmBackendTest::slurm_conf_;

// The row of `name` in a status table.
std::string row_of(const std::string& table, const std::string& name) {
  std::size_t at = table.find("\n" + name + " ");
  if (at == std::string::npos) return "";
  return table.substr(at + 1, table.find('\n', at + 1) - at - 1);
}

TEST_F(SlurmBackendTest, UpStatusLogsRestartAndDownOnAOneNodeSlurm) {
  CliResult up = cli(up_args());
  ASSERT_EQ(up.rc, 0) << up.output;
  EXPECT_NE(up.output.find("submitted as slurm job"), std::string::npos) << up.output;
  ClusterState s = state();
  EXPECT_EQ(s.backend, "slurm");
  ASSERT_FALSE(s.slurm_job_id.empty());
  EXPECT_EQ(s.slurm_job_state, "RUNNING");
  ASSERT_EQ(s.services.size(), 4u);
  // Slurm runs the batch script and one step per service, all carrying the run's token.
  ASSERT_TRUE(poll_until([&] {
    return service_pid("--metrics-port " + std::to_string(learner_port_ + 2)) != 0 &&
           service_pid("--metrics-port " + std::to_string(learner_port_ + 10)) != 0 &&
           service_pid("--metrics-port " + std::to_string(learner_port_ + 11)) != 0 &&
           service_pid("--metrics-port " + std::to_string(learner_port_ + 20)) != 0;
  })) << cli({"status", "--state-dir", state_dir_}).output;

  // status: the job and one running step per service, on this node.
  CliResult status = cli({"status", "--state-dir", state_dir_});
  ASSERT_EQ(status.rc, 0) << status.output;
  EXPECT_NE(status.output.find("slurm job " + s.slurm_job_id + " RUNNING"), std::string::npos)
      << status.output;
  for (const char* name : {"learner-0", "rollout-0", "rollout-1", "reward-0"}) {
    std::string row = row_of(status.output, name);
    EXPECT_NE(row.find(" running "), std::string::npos) << name << "\n" << status.output;
    EXPECT_NE(row.find(" " + s.slurm_job_id + "."), std::string::npos) << name << "\n"
                                                                       << status.output;
    EXPECT_NE(row.find(short_hostname()), std::string::npos) << name << "\n" << status.output;
  }

  // logs: each step's output, with the command line dice-cluster gave it.
  CliResult logs = cli({"logs", "rollout-1", "--state-dir", state_dir_});
  ASSERT_EQ(logs.rc, 0) << logs.output;
  EXPECT_NE(logs.output.find("sleepy_service_test_double args: --config"), std::string::npos)
      << logs.output;
  EXPECT_NE(logs.output.find("--run-id slurm-" + token_ + " --worker-index 1 --metrics-port " +
                             std::to_string(learner_port_ + 11)),
            std::string::npos)
      << logs.output;
  EXPECT_EQ(logs.output.find("learner-0.log"), std::string::npos) << logs.output;

  // A second up on the same state dir is refused while the job is active.
  CliResult again = cli(up_args());
  EXPECT_EQ(again.rc, 1) << again.output;
  EXPECT_NE(again.output.find("already up"), std::string::npos) << again.output;
  EXPECT_NE(again.output.find("slurm job " + s.slurm_job_id), std::string::npos) << again.output;

  // SIGKILL one service: its step ends and the batch script starts it again as a new step.
  pid_t killed = service_pid("--metrics-port " + std::to_string(learner_port_ + 10));
  ASSERT_NE(killed, 0);
  ASSERT_EQ(kill(killed, SIGKILL), 0);
  ASSERT_TRUE(poll_until([&] {
    CliResult now = cli({"status", "--state-dir", state_dir_});
    std::string row = row_of(now.output, "rollout-0");
    return row.find(" running ") != std::string::npos && row.find(" 1 ") != std::string::npos &&
           row.find(" " + s.slurm_job_id + ".") != std::string::npos;
  })) << cli({"status", "--state-dir", state_dir_}).output;
  // squeue lists a step a moment before its task runs.
  pid_t restarted = 0;
  EXPECT_TRUE(poll_until([&] {
    restarted = service_pid("--metrics-port " + std::to_string(learner_port_ + 10));
    return restarted != 0;
  }));
  EXPECT_NE(restarted, killed);
  logs = cli({"logs", "rollout-0", "--state-dir", state_dir_});
  EXPECT_NE(logs.output.find("starting rollout-0 on " + short_hostname() + " (restarts so far: 1)"),
            std::string::npos)
      << logs.output;

  // down: Slurm reports the job ended, and no process of the run remains.
  CliResult stopped = down();
  ASSERT_EQ(stopped.rc, 0) << stopped.output;
  EXPECT_NE(stopped.output.find("slurm job " + s.slurm_job_id), std::string::npos)
      << stopped.output;
  Result<SlurmJobInfo> job = query_slurm_job(s.slurm_job_id);
  ASSERT_TRUE(job.ok()) << job.status().to_string();
  EXPECT_TRUE(!job->known || !slurm_state_active(job->state)) << job->state;
  Result<std::vector<SlurmStep>> steps = query_slurm_steps(s.slurm_job_id);
  ASSERT_TRUE(steps.ok()) << steps.status().to_string();
  EXPECT_TRUE(steps->empty());
  EXPECT_TRUE(processes_with_token(token_).empty());
  for (const auto& entry : state().services) {
    EXPECT_EQ(entry.state, ServiceRunState::kStopped) << entry.name;
    EXPECT_TRUE(entry.step.empty()) << entry.name;
  }
  status = cli({"status", "--state-dir", state_dir_});
  EXPECT_EQ(status.rc, 0) << status.output;
  EXPECT_NE(status.output.find("slurm job " + s.slurm_job_id + " CANCELLED"), std::string::npos)
      << status.output;
}

// cluster.dash with the slurm backend: dice-dash runs as a step of the job on the learner's node,
// up prints its address, it serves the run's log, and down (scancel) stops it with the run.
TEST_F(SlurmBackendTest, UpStartsTheDashboardAsAStepAndDownStopsIt) {
  const int port = learner_port_ + 30;
  CliResult up =
      cli(up_args({"cluster.dash.enabled=true", "cluster.dash.port=" + std::to_string(port),
                   "run.reward_log_path=" + dir_ + "/reward_log"}));
  ASSERT_EQ(up.rc, 0) << up.output;
  EXPECT_NE(up.output.find("dashboard: http://127.0.0.1:" + std::to_string(port) + "/ on " +
                           short_hostname()),
            std::string::npos)
      << up.output;
  const ClusterState s = state();  // kept: `dash` points into it
  ASSERT_EQ(s.services.size(), 5u);
  const ServiceState* dash = cli_test::find_service(s, "dash-0");
  ASSERT_NE(dash, nullptr);
  EXPECT_EQ(dash->role, "dash");
  const testing_util::HttpResult runs = cli_test::dashboard_runs(port);
  EXPECT_EQ(runs.status, 200) << cli({"logs", "dash-0", "--state-dir", state_dir_}).output;
  EXPECT_NE(runs.body.find("\"state\":\"missing\""), std::string::npos) << runs.body;
  CliResult status = cli({"status", "--state-dir", state_dir_});
  EXPECT_NE(row_of(status.output, "dash-0").find(" running "), std::string::npos) << status.output;

  CliResult stopped = down();
  ASSERT_EQ(stopped.rc, 0) << stopped.output;
  EXPECT_TRUE(processes_with_token(token_).empty());
  EXPECT_EQ(testing_util::http_get(port, "/api/runs").status, 0) << "dice-dash still answers";
}

TEST_F(SlurmBackendTest, ClearErrorsForNoSbatchARejectedScriptAndAFailingJob) {
  // No sbatch on PATH: exit 2, naming sbatch.
  CliResult r = cli(up_args(), {"PATH=/nonexistent"});
  EXPECT_EQ(r.rc, 2) << r.output;
  EXPECT_NE(r.output.find("'sbatch' not found on PATH"), std::string::npos) << r.output;

  // sbatch rejects the script (no such partition): exit 1 with Slurm's words and the script path.
  r = cli(up_args({"cluster.slurm.partition=no_such_partition"}));
  EXPECT_EQ(r.rc, 1) << r.output;
  EXPECT_NE(r.output.find("sbatch rejected " + state_dir_ + "/job.sbatch"), std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("invalid partition"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("cluster.slurm.partition='no_such_partition'"), std::string::npos)
      << r.output;

  // The job fails at launch (its batch output cannot be opened): exit 1 naming the job, its
  // state, Slurm's reason and where the batch output was to go.
  r = cli(up_args({"cluster.slurm.extra_args=[--output=/nonexistent/dice/x.out]"}));
  EXPECT_EQ(r.rc, 1) << r.output;
  EXPECT_NE(r.output.find("ended FAILED (reason JobLaunchFailure) before its services started"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("batch output " + state_dir_ + "/slurm-"), std::string::npos) << r.output;
  EXPECT_TRUE(processes_with_token(token_).empty());
}

}  // namespace
}  // namespace dice::cluster
