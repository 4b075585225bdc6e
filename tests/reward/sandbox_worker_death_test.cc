// Sandboxed processes die with their worker: a real worker-like parent process
// (sandbox_parent_test_double) runs a candidate-like command in the sandbox and is SIGKILLed
// mid-run, as the supervisor or the OOM killer would; afterwards no process of that run remains.
//   - isolated (every layer; needs root): the command, a plain binary it started and a daemon it
//     double-forked out of its session all die with the worker (the run's init gets the
//     parent-death signal and, as PID 1 of the run's PID namespace, takes the namespace with it);
//   - plain (rlimits and the uid switch only, the trusted commands' mode): the command dies with
//     the worker, although switching uid cleared its first parent-death setting.
// Both start their run from a thread that ends once the run is ready: the run must outlive that
// thread (it answers the worker after the thread is gone) and die with the process.
//   - a judging in progress (every layer; needs root and torch): the evaluator itself
//     (evaluator_parent_test_double) judges a candidate whose kernel hangs, with its judge and
//     runner from a prestart and their successors started ahead, as a reward worker's GPU slot
//     does; SIGKILLed mid-candidate, none of its processes remains.
// Processes are found in /proc by a marker in their command line and, isolated, by the run's
// PID namespace; the test polls with a deadline.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <thread>

#include "common/remove_tree.h"
#include "tests/support/child_process.h"

namespace dice {
namespace {

namespace fs = std::filesystem;
using std::chrono::milliseconds;
using testing_util::ChildProcess;

constexpr auto kDeadline = std::chrono::seconds(30);

std::string read_text(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// The pids of the processes whose command line holds `marker` or that live in the PID namespace
// `pid_ns` ("pid:[N]"; empty: no namespace test), but for this test and `worker` (whose own
// command line holds the marker too).
std::set<pid_t> run_processes(const std::string& marker, const std::string& pid_ns, pid_t worker) {
  std::set<pid_t> out;
  std::error_code error;
  for (const auto& entry : fs::directory_iterator("/proc", error)) {
    const std::string name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    const pid_t pid = static_cast<pid_t>(std::stol(name));
    if (pid == getpid() || pid == worker) continue;
    std::string cmdline = read_text(entry.path() / "cmdline");
    if (cmdline.find(marker) != std::string::npos) out.insert(pid);
    std::error_code link_error;
    const fs::path ns = fs::read_symlink(entry.path() / "ns" / "pid", link_error);
    if (!pid_ns.empty() && !link_error && ns.string() == pid_ns) out.insert(pid);
  }
  return out;
}

// A process's parent and start time (fields 4 and 22 of /proc/<pid>/stat; the start time tells a
// reused pid apart); false when it is gone.
bool parent_and_start(const std::string& pid, pid_t* parent, std::string* start) {
  const std::string stat = read_text("/proc/" + pid + "/stat");
  const std::size_t name_end = stat.rfind(')');  // the command name may hold spaces
  if (name_end == std::string::npos) return false;
  std::istringstream in(stat.substr(name_end + 2));
  std::string field;
  for (int i = 3; i <= 22 && in >> field; ++i) {
    if (i == 4) *parent = static_cast<pid_t>(std::stol(field));
  }
  *start = field;
  return static_cast<bool>(in);
}

// Every process below `root` now, with its start time, by pid.
std::map<pid_t, std::string> descendants(pid_t root) {
  std::map<pid_t, std::pair<pid_t, std::string>> all;  // pid -> (parent, start time)
  std::error_code error;
  for (const auto& entry : fs::directory_iterator("/proc", error)) {
    const std::string name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::pair<pid_t, std::string> process;
    if (parent_and_start(name, &process.first, &process.second)) {
      all[static_cast<pid_t>(std::stol(name))] = process;
    }
  }
  std::map<pid_t, std::string> out;
  for (const auto& [pid, process] : all) {
    for (pid_t up = process.first; up > 1;) {
      if (up == root) {
        out[pid] = process.second;
        break;
      }
      auto it = all.find(up);
      up = it == all.end() ? 0 : it->second.first;
    }
  }
  return out;
}

// Of `before`, the processes still running (the same pid, started at the same time).
std::map<pid_t, std::string> still_running(const std::map<pid_t, std::string>& before) {
  std::map<pid_t, std::string> out;
  for (const auto& [pid, start] : before) {
    pid_t parent = 0;
    std::string now;
    if (parent_and_start(std::to_string(pid), &parent, &now) && now == start) out[pid] = start;
  }
  return out;
}

class SandboxWorkerDeathTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/dice_worker_death_XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    dir_ = pattern;
    marker_ = "dice-worker-death-" + std::to_string(getpid()) + "-" +
              ::testing::UnitTest::GetInstance()->current_test_info()->name();
  }
  void TearDown() override {
    worker_.reset();
    for (pid_t pid : processes()) kill(pid, SIGKILL);  // a failed test's
    EXPECT_TRUE(remove_tree(dir_).ok());
  }

  // Starts the worker double with `code` (marked) and waits until its run is ready: the run's pid.
  pid_t start_worker(const std::string& mode, const std::string& code) {
    worker_ = std::make_unique<ChildProcess>(
        DICE_SANDBOX_PARENT_TEST_DOUBLE,
        std::vector<std::string>{mode, (dir_ / "run.pid").string(), code + "\n# " + marker_},
        (dir_ / "worker.log").string());
    const auto end = std::chrono::steady_clock::now() + kDeadline;
    while (!fs::exists(dir_ / "run.pid") && std::chrono::steady_clock::now() < end) {
      if (worker_->wait_exit(milliseconds(10)) >= 0) break;  // it gave up: the log says why
    }
    const std::string pid = read_text(dir_ / "run.pid");
    EXPECT_FALSE(pid.empty()) << "the run never got ready\n" << read_text(dir_ / "worker.log");
    return pid.empty() ? -1 : static_cast<pid_t>(std::stol(pid));
  }

  std::set<pid_t> processes() const {
    return run_processes(marker_, pid_ns_, worker_ ? worker_->pid() : -1);
  }

  // Waits until at least `count` processes of the run are up; their pids.
  std::set<pid_t> wait_for_processes(std::size_t count) {
    const auto end = std::chrono::steady_clock::now() + kDeadline;
    std::set<pid_t> found = processes();
    while (found.size() < count && std::chrono::steady_clock::now() < end) {
      std::this_thread::sleep_for(milliseconds(10));
      found = processes();
    }
    return found;
  }

  // SIGKILLs the worker and waits until no process of its run is left: those left at the deadline.
  std::set<pid_t> kill_worker_and_wait() {
    worker_->kill();  // SIGKILL, then reaped
    const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    std::set<pid_t> left = processes();
    while (!left.empty() && std::chrono::steady_clock::now() < end) {
      std::this_thread::sleep_for(milliseconds(10));
      left = processes();
    }
    return left;
  }

  fs::path dir_;
  std::string marker_;
  std::string pid_ns_;
  std::unique_ptr<ChildProcess> worker_;
};

TEST_F(SandboxWorkerDeathTest, AnIsolatedRunAndAllItStartedDieWithTheWorker) {
  if (geteuid() != 0) GTEST_SKIP() << "isolation needs root (the run would be unavailable)";
  // The command starts `sleep`, double-forks a daemon that leaves its session and spins, and
  // spins itself.
  const pid_t init = start_worker("isolated",
                                  "import os, subprocess, sys\n"
                                  "subprocess.Popen(['sleep', '1000'])\n"
                                  "if os.fork() == 0:\n"
                                  "    os.setsid()\n"
                                  "    if os.fork() > 0:\n"
                                  "        os._exit(0)\n"
                                  "    while True:\n"
                                  "        pass\n"
                                  "print('READY', flush=True)\n"
                                  "sys.stdin.readline()\n"
                                  "print('PONG', flush=True)\n"
                                  "while True:\n"
                                  "    pass\n");
  ASSERT_GT(init, 0);
  std::error_code error;
  pid_ns_ = fs::read_symlink("/proc/" + std::to_string(init) + "/ns/pid", error).string();
  ASSERT_FALSE(error) << error.message();
  // The init, the command, sleep and the daemon.
  const std::set<pid_t> running = wait_for_processes(4);
  ASSERT_GE(running.size(), 4u) << "the run's processes did not all start";
  EXPECT_EQ(kill_worker_and_wait(), std::set<pid_t>{}) << "outlived their worker";
}

TEST_F(SandboxWorkerDeathTest, APlainRunDiesWithTheWorker) {
  const pid_t run = start_worker("plain",
                                 "import sys, time\n"
                                 "print('READY', flush=True)\n"
                                 "sys.stdin.readline()\n"
                                 "print('PONG', flush=True)\n"
                                 "while True:\n"
                                 "    time.sleep(0.05)\n");
  ASSERT_GT(run, 0);
  ASSERT_EQ(wait_for_processes(1), std::set<pid_t>{run});
  EXPECT_EQ(kill_worker_and_wait(), std::set<pid_t>{}) << "outlived its worker";
}

// The evaluator's own processes, as a reward worker runs them: SIGKILLed while its judging of a
// candidate whose kernel hangs holds a judge and a runner (with their successors started ahead),
// the worker leaves none of them behind.
TEST_F(SandboxWorkerDeathTest, AJudgingInProgressDiesWithItsWorker) {
  if (geteuid() != 0) GTEST_SKIP() << "isolation needs root (the run would be unavailable)";
  if (std::system("/usr/bin/python3 -c 'import torch' 2>/dev/null") != 0) {
    GTEST_SKIP() << "/usr/bin/python3 has no torch (apt-get install python3-torch)";
  }
  worker_ = std::make_unique<ChildProcess>(
      DICE_EVALUATOR_PARENT_TEST_DOUBLE,
      std::vector<std::string>{(fs::path(DICE_REWARD_TEST_DIR) / "evaluate_fixtures").string()},
      (dir_ / "worker.log").string());
  // The judge and the runner, each an init and its command, and their two successors: 8.
  const auto end = std::chrono::steady_clock::now() + kDeadline;
  std::map<pid_t, std::string> judging = descendants(worker_->pid());
  while (judging.size() < 8 && std::chrono::steady_clock::now() < end) {
    ASSERT_LT(worker_->wait_exit(milliseconds(10)), 0) << read_text(dir_ / "worker.log");
    judging = descendants(worker_->pid());
  }
  ASSERT_GE(judging.size(), 8u) << "the judging did not start\n" << read_text(dir_ / "worker.log");
  // Time for the judge to hand the runner the candidate, whose kernel then sleeps for an hour (any
  // stage would do: every process of the judging must die with the worker).
  std::this_thread::sleep_for(std::chrono::seconds(3));
  judging = descendants(worker_->pid());
  ASSERT_LT(worker_->wait_exit(milliseconds(0)), 0) << read_text(dir_ / "worker.log");
  worker_->kill();  // SIGKILL, then reaped
  std::map<pid_t, std::string> left = still_running(judging);
  for (auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
       !left.empty() && std::chrono::steady_clock::now() < until; left = still_running(left)) {
    std::this_thread::sleep_for(milliseconds(10));
  }
  std::string named;
  for (const auto& [pid, start] : left) {
    std::string command = read_text("/proc/" + std::to_string(pid) + "/cmdline");
    std::replace(command.begin(), command.end(), '\0', ' ');
    named += std::to_string(pid) + " " + command + "\n";
    kill(pid, SIGKILL);  // not left to the next test
  }
  EXPECT_EQ(left.size(), 0u) << "of " << judging.size() << ", outlived their worker:\n" << named;
}

}  // namespace
}  // namespace dice
