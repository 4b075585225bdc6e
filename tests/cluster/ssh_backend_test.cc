// Integration tests of dice-cluster's ssh backend against a real sshd: a private one on 127.0.0.1
// (a free high port, a generated host key, one client key authorised for the current user) that
// the run reaches through cluster.ssh.extra_args. The services are the test doubles of
// tests/cluster/; the nodes are 127.0.0.1 and localhost, two names for this machine, so that the
// run spans two "hosts". Skips when /usr/sbin/sshd is missing (Debian: openssh-server).
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "cluster/cluster_state.h"
#include "cluster/process.h"
#include "common/remove_tree.h"
#include "tests/cluster/cli_test_support.h"
#include "tests/support/free_port.h"
#include "tests/support/http_get.h"

namespace dice::cluster {
namespace {

using testing_util::free_port;

using cli_test::kSleepy;

constexpr const char* kSshd = "/usr/sbin/sshd";
constexpr const char* kStubborn = "sigterm_ignoring_service_test_double";

using cli_test::CliResult;
using cli_test::poll_until;
using cli_test::processes_with_argument;
using cli_test::processes_with_token;
using cli_test::quote;
using cli_test::read_file;

// The parent pid of `pid` (field 4 of /proc/PID/stat, after the parenthesised command name).
pid_t getppid_of(pid_t pid) {
  std::string stat = read_file("/proc/" + std::to_string(pid) + "/stat");
  std::size_t close = stat.rfind(')');
  if (close == std::string::npos) return 0;
  std::istringstream fields(stat.substr(close + 1));
  std::string state;
  long parent = 0;
  fields >> state >> parent;
  return static_cast<pid_t>(parent);
}

class SshBackendTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (access(kSshd, X_OK) != 0) {
      GTEST_SKIP() << kSshd << " not found: install openssh-server (tools/setup does) to run the "
                   << "ssh backend's tests";
    }
    // sshd running as root needs its privilege separation folder, which Debian's init script
    // creates at boot; containers without an init lack it.
    if (getuid() == 0 && !std::filesystem::exists("/run/sshd")) mkdir("/run/sshd", 0755);
    if (!std::filesystem::exists("/run/sshd")) {
      GTEST_SKIP() << "/run/sshd (sshd's privilege separation folder) is missing and only root "
                   << "can create it";
    }
    dir_ = cli_test::make_temp_dir("dice_ssh");
    state_dir_ = dir_ + "/state";
    token_ = std::to_string(getpid()) + "-" + std::filesystem::path(dir_).filename().string();
    run_id_ = "test-" + token_;
    key_ = dir_ + "/client_key";
    for (const std::string& key : {dir_ + "/host_key", key_}) {
      std::string keygen = "ssh-keygen -q -t ed25519 -N '' -f " + quote(key) + " >/dev/null 2>&1";
      ASSERT_EQ(std::system(keygen.c_str()), 0) << keygen;
    }
    std::filesystem::copy_file(key_ + ".pub", dir_ + "/authorized_keys");
    port_ = free_port();
    ASSERT_GT(port_, 0);
    std::ofstream(dir_ + "/sshd_config")
        << "Port " << port_ << "\nListenAddress 127.0.0.1\nHostKey " << dir_ << "/host_key\n"
        << "AuthorizedKeysFile " << dir_ << "/authorized_keys\nPidFile " << dir_ << "/sshd.pid\n"
        << "StrictModes no\nUsePAM no\nPasswordAuthentication no\n"
        << "KbdInteractiveAuthentication no\nPermitRootLogin prohibit-password\n";
    sshd_pid_ = fork();
    if (sshd_pid_ == 0) {
      std::string config = dir_ + "/sshd_config", log = dir_ + "/sshd.log";
      execl(kSshd, kSshd, "-D", "-f", config.c_str(), "-E", log.c_str(),
            static_cast<char*>(nullptr));
      _exit(127);
    }
    // Ready when a login runs a command.
    std::string probe = "ssh " + join_quoted(ssh_args()) + " 127.0.0.1 true >/dev/null 2>&1";
    ASSERT_TRUE(poll_until([&] { return std::system(probe.c_str()) == 0; }, 10))
        << "sshd did not accept a login; its log:\n"
        << read_file(dir_ + "/sshd.log");
  }

  void TearDown() override {
    if (dir_.empty()) return;
    // Leave nothing behind even when a test failed half-way.
    bool left = !processes_with_token(token_).empty() || !processes_with_argument(run_id_).empty();
    if (left && std::filesystem::exists(state_dir_ + "/state.yaml")) {
      (void)cli({"down", "--state-dir", state_dir_});
    }
    for (pid_t pid : processes_with_token(token_)) kill(pid, SIGKILL);
    for (pid_t pid : processes_with_argument(run_id_)) kill(pid, SIGKILL);
    if (sshd_pid_ > 0) {
      kill(sshd_pid_, SIGTERM);
      waitpid(sshd_pid_, nullptr, 0);
    }
    EXPECT_TRUE(remove_tree(dir_).ok());
  }

  std::vector<std::string> ssh_args() const {
    return {"-p", std::to_string(port_),
            "-i", key_,
            "-o", "StrictHostKeyChecking=no",
            "-o", "UserKnownHostsFile=/dev/null",
            "-o", "BatchMode=yes",
            "-o", "LogLevel=ERROR"};
  }
  static std::string join_quoted(const std::vector<std::string>& args) {
    std::string out;
    for (const auto& arg : args) out += (out.empty() ? "" : " ") + quote(arg);
    return out;
  }

  std::vector<std::string> up_args(const std::string& reward_exe,
                                   std::vector<std::string> extra = {}) {
    std::string extra_args;
    for (const auto& arg : ssh_args()) extra_args += (extra_args.empty() ? "" : ", ") + arg;
    std::vector<std::string> args = {
        "up",
        std::string(DICE_SOURCE_DIR) + "/configs/local.yaml",
        "run.id=" + run_id_,
        "cluster.backend=ssh",
        "cluster.ssh.extra_args=[" + extra_args + "]",
        "cluster.nodes=[{host: 127.0.0.1, roles: [learner, reward], gpus: {learner: [0], "
        "reward: [0]}}, {host: localhost, roles: [rollout], gpus: {rollout: [0, 1]}}]",
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
  ClusterState state() { return cli_test::read_state(state_dir_); }
  bool doubles_handle_signals() {
    return cli_test::wait_until_doubles_handle_signals(
        [&](const std::vector<std::string>& args) { return cli(args); }, state_dir_);
  }
  const ServiceState* service(const ClusterState& s, const std::string& name) {
    return cli_test::find_service(s, name);
  }
  // The pid the remote start script recorded for `s`; 0 while there is none.
  static pid_t remote_pid(const ServiceState& s) {
    return static_cast<pid_t>(std::atol(read_file(s.pid_file).c_str()));
  }
  // Waits until every service of the run has a live remote process; returns their pids by name.
  std::map<std::string, pid_t> wait_remote_pids() {
    ClusterState s = state();
    std::map<std::string, pid_t> pids;
    EXPECT_TRUE(poll_until([&] {
      pids.clear();
      for (const auto& entry : s.services) {
        pid_t pid = remote_pid(entry);
        if (pid > 0 && process_alive(pid, 0)) pids[entry.name] = pid;
      }
      return pids.size() == s.services.size();
    })) << cli({"status", "--state-dir", state_dir_}).output;
    return pids;
  }
  // Nothing of the run is left: no local process (the token) and no remote one (the run id).
  void expect_no_process_left(const std::map<std::string, pid_t>& remote) {
    EXPECT_TRUE(processes_with_token(token_).empty());
    EXPECT_TRUE(processes_with_argument(run_id_).empty());
    for (const auto& [name, pid] : remote) EXPECT_FALSE(process_alive(pid, 0)) << name;
  }

  std::string dir_, state_dir_, token_, run_id_, key_;
  int port_ = 0;
  pid_t sshd_pid_ = -1;
};

TEST_F(SshBackendTest, UpRunsServicesOnTheNodesRestartsAKilledOneAndDownLeavesNoProcess) {
  CliResult up = cli(up_args(kSleepy));
  ASSERT_EQ(up.rc, 0) << up.output;
  ClusterState s = state();
  EXPECT_EQ(s.backend, "ssh");
  ASSERT_EQ(s.services.size(), 4u);
  std::map<std::string, pid_t> remote = wait_remote_pids();
  ASSERT_EQ(remote.size(), 4u);

  // Each service is the test double with the run's arguments and its GPU, run by sshd (not a
  // child of dice-cluster's supervisor, whose children are the ssh clients).
  pid_t rollout1 = remote["rollout-1"];
  std::string cmdline = cli_test::process_command_line(rollout1);
  EXPECT_NE(cmdline.find(std::string(kSleepy) + " --config"), std::string::npos) << cmdline;
  EXPECT_NE(cmdline.find("--run-id " + run_id_ + " --worker-index 1"), std::string::npos);
  std::string environ = read_file("/proc/" + std::to_string(rollout1) + "/environ");
  EXPECT_NE(environ.find(std::string("CUDA_VISIBLE_DEVICES=1") + '\0'), std::string::npos);
  EXPECT_EQ(environ.find("DICE_CLUSTER_TEST_TOKEN"), std::string::npos);
  EXPECT_NE(getppid_of(rollout1), s.supervisor_pid);

  CliResult status = cli({"status", "--state-dir", state_dir_});
  ASSERT_EQ(status.rc, 0) << status.output;
  for (const auto& entry : s.services) {
    std::string row = status.output.substr(status.output.find(entry.name));
    row = row.substr(0, row.find('\n'));
    EXPECT_NE(row.find(entry.name == "rollout-0" || entry.name == "rollout-1" ? "localhost"
                                                                              : "127.0.0.1"),
              std::string::npos)
        << row;
    EXPECT_NE(row.find("running"), std::string::npos) << row;
    EXPECT_NE(row.find(" " + std::to_string(remote[entry.name]) + " "), std::string::npos) << row;
  }

  // SIGKILL a service on its node: its ssh client exits, and the supervisor restarts it.
  ASSERT_EQ(kill(remote["rollout-0"], SIGKILL), 0);
  ClusterState after;
  ASSERT_TRUE(poll_until([&] {
    after = state();
    const ServiceState* r = service(after, "rollout-0");
    pid_t now = r == nullptr ? 0 : remote_pid(*r);
    return r != nullptr && r->restarts == 1 && r->state == ServiceRunState::kRunning && now > 0 &&
           now != remote["rollout-0"] && process_alive(now, 0);
  })) << cli({"status", "--state-dir", state_dir_}).output;
  EXPECT_EQ(service(after, "rollout-0")->last_exit, "killed by signal 9");
  pid_t restarted = remote_pid(*service(after, "rollout-0"));

  // Its output came back through ssh into the local log: the first run's and the restart's.
  CliResult logs = cli({"logs", "rollout-0", "--state-dir", state_dir_});
  ASSERT_EQ(logs.rc, 0) << logs.output;
  std::string args_line = "sleepy_service_test_double args: --config";
  std::size_t first = logs.output.find(args_line);
  ASSERT_NE(first, std::string::npos) << logs.output;
  EXPECT_NE(logs.output.find(args_line, first + 1), std::string::npos) << logs.output;
  EXPECT_NE(logs.output.find("--run-id " + run_id_ + " --worker-index 0"), std::string::npos);

  ASSERT_TRUE(doubles_handle_signals());
  CliResult stopped = cli({"down", "--state-dir", state_dir_});
  ASSERT_EQ(stopped.rc, 0) << stopped.output;
  remote["rollout-0"] = restarted;
  expect_no_process_left(remote);
  for (const auto& entry : state().services) {
    EXPECT_EQ(entry.state, ServiceRunState::kStopped) << entry.name;
    // The doubles exit 0 on the SIGTERM the drain sent them over ssh.
    EXPECT_EQ(entry.last_exit, "exit 0") << entry.name;
    EXPECT_FALSE(std::filesystem::exists(entry.pid_file)) << entry.pid_file;
  }
}

// cluster.dash with the ssh backend: dice-dash runs on the learner's node (127.0.0.1) through
// ssh like the services, up prints its address, it serves the run's log, and down stops it there.
TEST_F(SshBackendTest, UpStartsTheDashboardOnTheLearnersNodeAndDownStopsIt) {
  const int port = free_port();
  CliResult up = cli(
      up_args(kSleepy, {"cluster.dash.enabled=true", "cluster.dash.port=" + std::to_string(port),
                        "run.reward_log_path=" + dir_ + "/reward_log"}));
  ASSERT_EQ(up.rc, 0) << up.output;
  EXPECT_NE(
      up.output.find("dashboard: http://127.0.0.1:" + std::to_string(port) + "/ on 127.0.0.1"),
      std::string::npos)
      << up.output;
  const ClusterState s = state();  // kept: `dash` points into it
  ASSERT_EQ(s.services.size(), 5u);
  const ServiceState* dash = service(s, "dash-0");
  ASSERT_NE(dash, nullptr);
  EXPECT_EQ(dash->role, "dash");
  EXPECT_EQ(dash->node, "127.0.0.1");
  std::map<std::string, pid_t> remote = wait_remote_pids();
  ASSERT_EQ(remote.size(), 5u);
  // Run by sshd on the node, not by the supervisor (whose child is the ssh client).
  const std::string cmdline = cli_test::process_command_line(remote["dash-0"]);
  EXPECT_NE(cmdline.find("dice-dash --bind 127.0.0.1 --port " + std::to_string(port)),
            std::string::npos)
      << cmdline;
  EXPECT_NE(getppid_of(remote["dash-0"]), s.supervisor_pid);
  const testing_util::HttpResult runs = cli_test::dashboard_runs(port);
  EXPECT_EQ(runs.status, 200) << cli({"logs", "dash-0", "--state-dir", state_dir_}).output;
  EXPECT_NE(runs.body.find("\"state\":\"missing\""), std::string::npos) << runs.body;

  ASSERT_TRUE(doubles_handle_signals());
  CliResult stopped = cli({"down", "--state-dir", state_dir_});
  ASSERT_EQ(stopped.rc, 0) << stopped.output;
  expect_no_process_left(remote);
  EXPECT_EQ(testing_util::http_get(port, "/api/runs").status, 0) << "dice-dash still answers";
}

TEST_F(SshBackendTest, DownKillsWhatAKilledSupervisorLeftOnTheNodes) {
  // reward-0 ignores SIGTERM, so losing its ssh link (the supervisor's death ends every ssh
  // client) leaves it running on its node: down must find it there and SIGKILL it.
  ASSERT_EQ(cli(up_args(kStubborn, {"cluster.local.drain_timeout_ms=300"})).rc, 0);
  std::map<std::string, pid_t> remote = wait_remote_pids();
  ASSERT_TRUE(doubles_handle_signals());
  ClusterState s = state();
  ASSERT_EQ(kill(s.supervisor_pid, SIGKILL), 0);
  // The others stop on the SIGTERM their start scripts send when the link ends.
  EXPECT_TRUE(poll_until([&] { return !process_alive(remote["learner-0"], 0); }));
  EXPECT_TRUE(process_alive(remote["reward-0"], 0));

  CliResult stopped = cli({"down", "--state-dir", state_dir_});
  ASSERT_EQ(stopped.rc, 0) << stopped.output;
  EXPECT_NE(stopped.output.find("reward-0 (pid " + std::to_string(remote["reward-0"]) + ")"),
            std::string::npos)
      << stopped.output;
  EXPECT_NE(stopped.output.find("SIGKILL"), std::string::npos) << stopped.output;
  expect_no_process_left(remote);
}

TEST_F(SshBackendTest, DrainSigkillsARemoteServiceThatIgnoresSigterm) {
  // 3 s of drain: the services that do stop on SIGTERM must get to exit 0 on a loaded CI
  // machine (with 300 ms, a CI run saw learner-0 SIGKILLed too), and reward-0, which ignores it,
  // is still killed at the end.
  ASSERT_EQ(cli(up_args(kStubborn, {"cluster.local.drain_timeout_ms=3000"})).rc, 0);
  std::map<std::string, pid_t> remote = wait_remote_pids();
  ASSERT_TRUE(doubles_handle_signals());
  CliResult stopped = cli({"down", "--state-dir", state_dir_});
  ASSERT_EQ(stopped.rc, 0) << stopped.output;
  expect_no_process_left(remote);
  ClusterState s = state();
  EXPECT_EQ(service(s, "reward-0")->last_exit, "killed by signal 9");
  EXPECT_EQ(service(s, "learner-0")->last_exit, "exit 0");
  CliResult logs = cli({"logs", "supervisor", "--state-dir", state_dir_});
  EXPECT_NE(logs.output.find("still running after the drain timeout"), std::string::npos)
      << logs.output;
}

TEST_F(SshBackendTest, AnUnreachableNodeIsRetriedAndNamedInTheServiceLog) {
  // Nothing listens on port 1: ssh fails (255) each time, and the service is given up.
  std::vector<std::string> args = up_args(kSleepy, {"cluster.local.max_restarts=1"});
  for (auto& arg : args) {
    std::size_t at = arg.find("-p, " + std::to_string(port_));
    if (at != std::string::npos) arg.replace(at, 4 + std::to_string(port_).size(), "-p, 1");
  }
  ASSERT_EQ(cli(args).rc, 0);
  // Every node is unreachable: the first role whose services all gave up stops the run.
  ASSERT_TRUE(poll_until([&] { return state().supervisor_state == "stopped"; }))
      << cli({"status", "--state-dir", state_dir_}).output;
  EXPECT_NE(state().stop_reason.find("gave up (exit 255 (ssh failed; see the service log))"),
            std::string::npos)
      << state().stop_reason;
  EXPECT_EQ(service(state(), "rollout-1")->last_exit, "exit 255 (ssh failed; see the service log)");
  CliResult logs = cli({"logs", "rollout-1", "--state-dir", state_dir_});
  EXPECT_NE(logs.output.find("Connection refused"), std::string::npos) << logs.output;
  // down cannot check a node it cannot reach, and says so.
  CliResult stopped = cli({"down", "--state-dir", state_dir_});
  EXPECT_EQ(stopped.rc, 1) << stopped.output;
  EXPECT_NE(stopped.output.find("cannot reach 127.0.0.1 over ssh"), std::string::npos)
      << stopped.output;
  EXPECT_TRUE(processes_with_token(token_).empty());
}

}  // namespace
}  // namespace dice::cluster
