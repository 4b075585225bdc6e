// Unit tests of what the ssh backend runs (cluster/remote_commands.h): the ssh arguments, and the
// remote start and sweep scripts, run here by a real `sh` the way a node's login shell runs them
// (everything but the ssh hop itself; tests/cluster/ssh_backend_test.cc adds that).
#include "cluster/remote_commands.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "cluster/process.h"
#include "common/remove_tree.h"
#include "tests/cluster/cli_test_support.h"

namespace dice::cluster {
namespace {

using cli_test::poll_until;
using cli_test::read_file;

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

// A remote command run by `sh -c` as sshd would run it: stdin a pipe the test holds open (as the
// supervisor holds the ssh client's), stdout and stderr to `out_path`.
class RemoteShell {
 public:
  RemoteShell(const std::string& command, const std::string& out_path) {
    int fds[2];
    EXPECT_EQ(pipe(fds), 0);
    pid_ = fork();
    if (pid_ == 0) {
      dup2(fds[0], STDIN_FILENO);
      int out = open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      dup2(out, STDOUT_FILENO);
      dup2(out, STDERR_FILENO);
      close(fds[1]);
      execl("/bin/sh", "sh", "-c", command.c_str(), static_cast<char*>(nullptr));
      _exit(127);
    }
    close(fds[0]);
    stdin_fd_ = fds[1];
  }
  ~RemoteShell() {
    close_stdin();
    if (pid_ > 0 && !exited_) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
  }
  // What losing the ssh link looks like to the remote side.
  void close_stdin() {
    if (stdin_fd_ >= 0) close(stdin_fd_);
    stdin_fd_ = -1;
  }
  // The exit status, or -1 when it did not exit within `seconds`.
  int wait_exit(double seconds = 10) {
    int status = 0;
    bool done = poll_until([&] { return waitpid(pid_, &status, WNOHANG) == pid_; }, seconds);
    if (!done) return -1;
    exited_ = true;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }

 private:
  pid_t pid_ = -1;
  int stdin_fd_ = -1;
  bool exited_ = false;
};

class RemoteScriptTest : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = cli_test::make_temp_dir("dice_remote"); }
  void TearDown() override { EXPECT_TRUE(remove_tree(dir_).ok()); }

  // A service spec running `/bin/sh -c script` on GPUs `gpus`.
  static ServiceSpec shell_service(const std::string& script, std::vector<int> gpus = {}) {
    ServiceSpec spec;
    spec.name = "rollout-0";
    spec.executable = "/bin/sh";
    spec.args = {"-c", script};
    spec.gpus = std::move(gpus);
    return spec;
  }
  std::string pid_file() const { return dir_ + "/remote/rollout-0.pid"; }
  pid_t recorded_pid() const {
    return static_cast<pid_t>(std::atol(read_file(pid_file()).c_str()));
  }

  std::string dir_;
};

TEST(ShellQuoteTest, ARealShellGetsTheArgumentBack) {
  for (std::string arg : {"plain", "two words", "it's", "$HOME `x` \"q\" \\", ""}) {
    EXPECT_EQ(run_shell("printf %s " + shell_quote(arg)), arg);
  }
}

TEST(SshPrefixTest, ExtraArgsComeFirstThenTheDefaultsThenTheTarget) {
  SshOptions ssh;
  ssh.user = "dice";
  ssh.extra_args = {"-p", "2222", "-o", "BatchMode=no"};
  std::vector<std::string> argv = ssh_prefix(ssh, "/usr/bin/ssh", "gpu2");
  ASSERT_GE(argv.size(), 7u);
  EXPECT_EQ(argv.front(), "/usr/bin/ssh");
  EXPECT_EQ(std::vector<std::string>(argv.begin() + 1, argv.begin() + 5), ssh.extra_args);
  EXPECT_EQ(argv.back(), "dice@gpu2");
  std::string joined;
  for (const auto& arg : argv) joined += arg + " ";
  EXPECT_NE(joined.find("-T -o BatchMode=yes -o ConnectTimeout="), std::string::npos) << joined;

  ssh.user.clear();
  ssh.extra_args.clear();
  argv = ssh_prefix(ssh, "ssh", "gpu1");
  EXPECT_EQ(argv[1], "-T");
  EXPECT_EQ(argv.back(), "gpu1");
}

TEST_F(RemoteScriptTest, StartRunsTheServiceWithItsEnvironmentAndPassesItsExitStatusBack) {
  ServiceSpec spec = shell_service(
      "echo \"devices=$CUDA_VISIBLE_DEVICES tag=$DICE_CLUSTER_SERVICE dir=$(pwd) arg's\"; exit 7",
      {2, 3});
  RemoteShell shell(remote_start_command(spec, pid_file(), "r 1/rollout-0", dir_), dir_ + "/out");
  EXPECT_EQ(shell.wait_exit(), 7);
  EXPECT_EQ(read_file(dir_ + "/out"), "devices=2,3 tag=r 1/rollout-0 dir=" + dir_ + " arg's\n");
  EXPECT_FALSE(std::filesystem::exists(pid_file()));  // removed when the service ended
}

TEST_F(RemoteScriptTest, AServiceKilledBySignalExitsWith128PlusTheSignal) {
  RemoteShell shell(remote_start_command(shell_service("kill -9 $$"), pid_file(), "r/x", dir_),
                    dir_ + "/out");
  EXPECT_EQ(shell.wait_exit(), 128 + 9);
}

TEST_F(RemoteScriptTest, ALostLinkStopsTheServiceWithSigterm) {
  RemoteShell shell(
      remote_start_command(shell_service("exec sleep 30"), pid_file(), "r/rollout-0", dir_),
      dir_ + "/out");
  ASSERT_TRUE(poll_until([&] { return std::filesystem::exists(pid_file()); }));
  pid_t service = recorded_pid();
  ASSERT_TRUE(process_alive(service, 0));
  shell.close_stdin();
  EXPECT_EQ(shell.wait_exit(), 128 + SIGTERM);
  EXPECT_FALSE(process_alive(service, 0));
}

TEST_F(RemoteScriptTest, SweepSignalsOnlyTheTaggedServiceAndDropsStalePidFiles) {
  RemoteShell shell(
      remote_start_command(shell_service("exec sleep 30"), pid_file(), "r/rollout-0", dir_),
      dir_ + "/out");
  ASSERT_TRUE(poll_until([&] { return std::filesystem::exists(pid_file()); }));
  pid_t service = recorded_pid();

  // A pid file naming a live process of something else (this test: a reused pid) and one naming
  // no process: neither is signalled; the one whose process is gone is dropped.
  std::string reused = dir_ + "/remote/reused.pid", gone = dir_ + "/remote/gone.pid";
  std::ofstream(reused) << getpid() << "\n";
  std::ofstream(gone) << 999999999 << "\n";
  std::vector<RemoteTarget> targets = {
      {pid_file(), "r/rollout-0"}, {reused, "r/reward-0"}, {gone, "r/learner-0"}};

  EXPECT_EQ(run_shell(remote_sweep_command("0", targets)),
            "r/rollout-0 " + std::to_string(service) + "\n");
  EXPECT_TRUE(process_alive(service, 0));  // "0" only looks
  EXPECT_TRUE(std::filesystem::exists(reused));
  EXPECT_FALSE(std::filesystem::exists(gone));

  // The wrong tag never matches, even for the right pid file.
  EXPECT_EQ(run_shell(remote_sweep_command("TERM", {{pid_file(), "r2/rollout-0"}})), "");
  EXPECT_TRUE(process_alive(service, 0));

  EXPECT_EQ(run_shell(remote_sweep_command("TERM", targets)),
            "r/rollout-0 " + std::to_string(service) + "\n");
  EXPECT_EQ(shell.wait_exit(), 128 + SIGTERM);
  EXPECT_EQ(run_shell(remote_sweep_command("0", targets)), "");
}

TEST_F(RemoteScriptTest, StartStopsAnEarlierCopyStillRunning) {
  std::string command =
      remote_start_command(shell_service("exec sleep 30"), pid_file(), "r/rollout-0", dir_);
  RemoteShell first(command, dir_ + "/out1");
  ASSERT_TRUE(poll_until([&] { return std::filesystem::exists(pid_file()); }));
  pid_t earlier = recorded_pid();
  RemoteShell second(command, dir_ + "/out2");
  EXPECT_EQ(first.wait_exit(), 128 + SIGTERM);
  ASSERT_TRUE(poll_until([&] { return recorded_pid() != earlier && recorded_pid() > 0; }));
  EXPECT_TRUE(process_alive(recorded_pid(), 0));
  EXPECT_NE(read_file(dir_ + "/out2")
                .find("stopping an earlier r/rollout-0 (pid " + std::to_string(earlier) + ")"),
            std::string::npos)
      << read_file(dir_ + "/out2");
}

// The earlier copy's wrapper removes the pid file once it has reaped its service, by a check then
// a remove: the later copy must not write its own pid file before that wrapper is done, or the
// remove can take the new file (seen in CI as a pid file gone for good). The earlier wrapper is
// held stopped here to open that window wide.
TEST_F(RemoteScriptTest, StartWaitsForTheEarlierWrapperBeforeWritingItsPidFile) {
  std::string command =
      remote_start_command(shell_service("exec sleep 30"), pid_file(), "r/rollout-0", dir_);
  RemoteShell first(command, dir_ + "/out1");
  ASSERT_TRUE(poll_until([&] { return std::filesystem::exists(pid_file()); }));
  pid_t earlier = recorded_pid();
  std::string status = read_file("/proc/" + std::to_string(earlier) + "/status");
  size_t at = status.find("PPid:");
  ASSERT_NE(at, std::string::npos);
  pid_t wrapper = static_cast<pid_t>(std::atol(status.c_str() + at + 5));
  ASSERT_GT(wrapper, 1);
  ASSERT_EQ(kill(wrapper, SIGSTOP), 0);
  struct Resume {  // a failed assertion below must not leave a stopped process behind
    pid_t pid;
    ~Resume() { kill(pid, SIGCONT); }
  } resume{wrapper};

  RemoteShell second(command, dir_ + "/out2");
  // The earlier service dies at once (SIGTERM); its stopped wrapper cannot reap it yet.
  ASSERT_TRUE(poll_until([&] { return !process_alive(earlier, 0); }));
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  EXPECT_EQ(recorded_pid(), earlier) << "the later copy wrote its pid file before the earlier "
                                        "wrapper had finished with it";

  ASSERT_EQ(kill(wrapper, SIGCONT), 0);
  EXPECT_EQ(first.wait_exit(), 128 + SIGTERM);
  ASSERT_TRUE(poll_until([&] { return recorded_pid() != earlier && recorded_pid() > 0; }));
  EXPECT_TRUE(process_alive(recorded_pid(), 0));
  // And it stays: nothing removes the later copy's file.
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_TRUE(process_alive(recorded_pid(), 0));
}

}  // namespace
}  // namespace dice::cluster
