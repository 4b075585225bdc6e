// Unit tests of the state file (cluster/cluster_state.h) and the local options' checks.
#include "cluster/cluster_state.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "common/config/load.h"
#include "common/remove_tree.h"
#include "options/cluster_options.h"

namespace dice::cluster {
namespace {

std::string make_temp_dir() {
  std::string pattern = (std::filesystem::temp_directory_path() / "dice_state_XXXXXX").string();
  return mkdtemp(pattern.data());
}

ClusterState sample_state() {
  ClusterState state;
  state.run_id = "r7";
  state.config_path = "/etc/dice/local.yaml";
  state.supervisor_pid = 4242;
  state.supervisor_start_ticks = 81723;
  state.supervisor_state = "running";
  state.supervisor_started_at = 1764464521.25;
  state.drain_timeout_ms = 1500;
  ServiceState a;
  a.name = "rollout-1";
  a.role = "rollout";
  a.node = "gpu3";
  a.worker_index = 1;
  a.log_path = "/tmp/x/rollout-1.log";
  a.pid = 4250;
  a.start_ticks = 81730;
  a.state = ServiceRunState::kRestarting;
  a.restarts = 3;
  a.started_at = 1764464523.5;
  a.last_exit = "killed by signal 9";
  state.services.push_back(a);
  ServiceState b = a;
  b.name = "reward-0";
  b.state = ServiceRunState::kFailed;
  b.last_exit = "";
  state.services.push_back(b);
  return state;
}

TEST(ClusterStateTest, RoundTripsEveryField) {
  std::string dir = make_temp_dir();
  ClusterState written = sample_state();
  ASSERT_TRUE(write_state_file(dir, written).ok());
  EXPECT_FALSE(std::filesystem::exists(state_file_path(dir) + ".tmp"));
  Result<ClusterState> read = read_state_file(dir);
  ASSERT_TRUE(read.ok()) << read.status().to_string();
  EXPECT_EQ(read->run_id, "r7");
  EXPECT_EQ(read->config_path, written.config_path);
  EXPECT_EQ(read->supervisor_pid, 4242);
  EXPECT_EQ(read->supervisor_start_ticks, 81723u);
  EXPECT_EQ(read->supervisor_state, "running");
  EXPECT_DOUBLE_EQ(read->supervisor_started_at, 1764464521.25);
  EXPECT_EQ(read->drain_timeout_ms, 1500);
  ASSERT_EQ(read->services.size(), 2u);
  const ServiceState& s = read->services[0];
  EXPECT_EQ(s.name, "rollout-1");
  EXPECT_EQ(s.role, "rollout");
  EXPECT_EQ(s.node, "gpu3");
  EXPECT_EQ(s.worker_index, 1);
  EXPECT_EQ(s.log_path, "/tmp/x/rollout-1.log");
  EXPECT_EQ(s.pid, 4250);
  EXPECT_EQ(s.start_ticks, 81730u);
  EXPECT_EQ(s.state, ServiceRunState::kRestarting);
  EXPECT_EQ(s.restarts, 3);
  EXPECT_DOUBLE_EQ(s.started_at, 1764464523.5);
  EXPECT_EQ(s.last_exit, "killed by signal 9");
  EXPECT_EQ(read->services[1].state, ServiceRunState::kFailed);
  EXPECT_EQ(read->services[1].last_exit, "");
  EXPECT_TRUE(remove_tree(dir).ok());
}

TEST(ClusterStateTest, RoundTripsAnSshRunsRemoteTargets) {
  std::string dir = make_temp_dir();
  ClusterState written = sample_state();
  written.backend = "ssh";
  written.services[0].ssh = {"/usr/bin/ssh", "-p", "2222", "-T", "dice@gpu3"};
  written.services[0].pid_file = "/shared/state/remote/rollout-1.pid";
  written.services[0].remote_pid = 77;  // what status saw: not saved
  ASSERT_TRUE(write_state_file(dir, written).ok());
  Result<ClusterState> read = read_state_file(dir);
  ASSERT_TRUE(read.ok()) << read.status().to_string();
  EXPECT_EQ(read->backend, "ssh");
  EXPECT_EQ(read->services[0].ssh, written.services[0].ssh);
  EXPECT_EQ(read->services[0].pid_file, "/shared/state/remote/rollout-1.pid");
  EXPECT_EQ(read->services[0].remote_pid, 0);
  EXPECT_TRUE(read->services[1].ssh.empty());
  EXPECT_EQ(read->services[1].pid_file, "");
  EXPECT_TRUE(remove_tree(dir).ok());
}

TEST(ClusterStateTest, RoundTripsASlurmRunAndReadsAFileWithoutBackendAsLocal) {
  std::string dir = make_temp_dir();
  ClusterState written = sample_state();
  EXPECT_EQ(written.backend, "local");
  written.backend = "slurm";
  written.slurm_job_id = "812";
  written.slurm_job_state = "RUNNING";
  written.slurm_nodes = "gpu[1-2]";
  written.services[0].step = "812.3";
  ASSERT_TRUE(write_state_file(dir, written).ok());
  Result<ClusterState> read = read_state_file(dir);
  ASSERT_TRUE(read.ok()) << read.status().to_string();
  EXPECT_EQ(read->backend, "slurm");
  EXPECT_EQ(read->slurm_job_id, "812");
  EXPECT_EQ(read->slurm_job_state, "RUNNING");
  EXPECT_EQ(read->slurm_nodes, "gpu[1-2]");
  EXPECT_EQ(read->services[0].step, "812.3");
  EXPECT_EQ(read->services[1].step, "");

  // A state file written before the slurm backend existed has no backend key: a local run.
  {
    std::ofstream old_file(state_file_path(dir), std::ios::trunc);
    old_file << "run_id: r1\nconfig: /c.yaml\nsupervisor: {pid: 1, start_ticks: 2, state: "
                "running, started_at: 3}\ndrain_timeout_ms: 10\nservices: []\n";
  }
  read = read_state_file(dir);
  ASSERT_TRUE(read.ok()) << read.status().to_string();
  EXPECT_EQ(read->backend, "local");
  EXPECT_EQ(read->slurm_job_id, "");

  {
    std::ofstream bad(state_file_path(dir), std::ios::app);
    bad << "backend: kubernetes\n";
  }
  read = read_state_file(dir);
  ASSERT_FALSE(read.ok());
  EXPECT_NE(read.status().message().find("unknown backend 'kubernetes'"), std::string::npos)
      << read.status().message();
  EXPECT_TRUE(remove_tree(dir).ok());
}

TEST(ClusterStateTest, RewriteReplacesTheWholeFile) {
  std::string dir = make_temp_dir();
  ClusterState state = sample_state();
  ASSERT_TRUE(write_state_file(dir, state).ok());
  state.services.pop_back();
  state.run_id = "r8";
  ASSERT_TRUE(write_state_file(dir, state).ok());
  Result<ClusterState> read = read_state_file(dir);
  ASSERT_TRUE(read.ok());
  EXPECT_EQ(read->run_id, "r8");
  EXPECT_EQ(read->services.size(), 1u);
  EXPECT_TRUE(remove_tree(dir).ok());
}

TEST(ClusterStateTest, MissingFileIsNotFoundNamingIt) {
  std::string dir = make_temp_dir();
  Result<ClusterState> read = read_state_file(dir);
  ASSERT_FALSE(read.ok());
  EXPECT_EQ(read.status().code(), StatusCode::kNotFound);
  EXPECT_NE(read.status().message().find(dir + "/state.yaml"), std::string::npos);
  EXPECT_TRUE(remove_tree(dir).ok());
}

TEST(ClusterStateTest, DamagedFileIsCorruptionNamingIt) {
  std::string dir = make_temp_dir();
  ASSERT_TRUE(write_state_file(dir, sample_state()).ok());
  {
    std::ofstream damaged(state_file_path(dir), std::ios::trunc);
    damaged << "run_id: r1\nsupervisor: {pid: [1, 2]}\n";
  }
  Result<ClusterState> read = read_state_file(dir);
  ASSERT_FALSE(read.ok());
  EXPECT_EQ(read.status().code(), StatusCode::kCorruption);
  EXPECT_NE(read.status().message().find("state.yaml"), std::string::npos);

  {
    std::ofstream damaged(state_file_path(dir), std::ios::trunc);
    damaged << "{{{";
  }
  read = read_state_file(dir);
  ASSERT_FALSE(read.ok());
  EXPECT_EQ(read.status().code(), StatusCode::kCorruption);
  EXPECT_TRUE(remove_tree(dir).ok());
}

TEST(LocalOptionsTest, RejectsExecutablesForUnknownRolesAndABackwardBackoff) {
  Result<ClusterOptions> bad = config::load_config_text<ClusterOptions>(
      "local: {executables: {trainer: x}, restart_backoff_ms: 100, restart_backoff_max_ms: 10}\n",
      "cluster.yaml");
  ASSERT_FALSE(bad.ok());
  const std::string& message = bad.status().message();
  EXPECT_NE(message.find("local.executables.trainer"), std::string::npos) << message;
  EXPECT_NE(message.find("local.restart_backoff_max_ms"), std::string::npos) << message;

  Result<ClusterOptions> good = config::load_config_text<ClusterOptions>(
      "local: {executables: {reward: my_reward}, max_restarts: 2}\n", "cluster.yaml");
  ASSERT_TRUE(good.ok()) << good.status().to_string();
  EXPECT_EQ(good->local.executables.at("reward"), "my_reward");
  EXPECT_EQ(good->local.max_restarts, 2);
  EXPECT_EQ(good->local.drain_timeout_ms, 10000);
}

TEST(WorkerMetricsOptionsTest, PortRangesMustNotOverlapOrPass65535) {
  // Two rollout workers (9200, 9201) and one reward worker on the defaults: fine.
  const std::string two_rollouts =
      "nodes: [{host: a, roles: [learner, rollout, reward], gpus: {learner: [0], rollout: [0, "
      "1], reward: [0]}}]\n";
  Result<ClusterOptions> good = config::load_config_text<ClusterOptions>(two_rollouts, "c.yaml");
  ASSERT_TRUE(good.ok()) << good.status().to_string();
  EXPECT_EQ(good->worker_metrics.rollout_base_port, 9200);
  EXPECT_EQ(good->worker_metrics.reward_base_port, 9300);
  EXPECT_EQ(good->worker_count(NodeRole::kRollout), 2);

  // Reward's range starts on rollout-1's port.
  Result<ClusterOptions> bad = config::load_config_text<ClusterOptions>(
      two_rollouts + "worker_metrics: {reward_base_port: 9201}\n", "c.yaml");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("worker_metrics.rollout_base_port"), std::string::npos)
      << bad.status().message();
  EXPECT_NE(bad.status().message().find("9200..9201 overlap worker_metrics.reward_base_port"),
            std::string::npos)
      << bad.status().message();

  // A worker range over the learner's metrics port, and one past the last port.
  bad = config::load_config_text<ClusterOptions>(
      two_rollouts +
          "worker_metrics: {rollout_base_port: 9099, reward_base_port: 65535}\n"
          "learner: {metrics_port: 9100}\n",
      "c.yaml");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("overlap learner.metrics_port (9100)"), std::string::npos)
      << bad.status().message();
  bad = config::load_config_text<ClusterOptions>(
      two_rollouts + "worker_metrics: {rollout_base_port: 65535}\n", "c.yaml");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("past 65535"), std::string::npos) << bad.status().message();

  // 0 (any free port) collides with nothing.
  good = config::load_config_text<ClusterOptions>(
      two_rollouts + "worker_metrics: {rollout_base_port: 0, reward_base_port: 0}\n", "c.yaml");
  EXPECT_TRUE(good.ok()) << good.status().to_string();
}

}  // namespace
}  // namespace dice::cluster
