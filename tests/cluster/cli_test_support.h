// Helpers shared by the dice-cluster integration tests: run the CLI with a unique environment
// token (every process of a run inherits it, so "no process of the run remains" is a scan of
// /proc/*/environ for it), and poll with a deadline.
#pragma once

#include <dirent.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "cluster/cluster_state.h"
#include "cluster/process.h"
#include "tests/support/http_get.h"

namespace dice::cluster::cli_test {

struct CliResult {
  int rc = -1;
  std::string output;  // stdout and stderr
};

inline std::string make_temp_dir(const std::string& prefix) {
  std::string pattern = (std::filesystem::temp_directory_path() / (prefix + "_XXXXXX")).string();
  return mkdtemp(pattern.data());
}

inline std::string quote(const std::string& arg) {
  std::string out = "'";
  for (char c : arg) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

inline std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// Runs `exe args` under `env` (e.g. {"A=1"}) plus DICE_CLUSTER_TEST_TOKEN=token, capturing its
// output through `out_path`.
inline CliResult run_cli(const std::string& exe, const std::vector<std::string>& args,
                         const std::string& token, const std::string& out_path,
                         const std::vector<std::string>& env = {}) {
  std::string command = "env DICE_CLUSTER_TEST_TOKEN=" + token;
  for (const auto& var : env) command += " " + quote(var);
  command += " " + quote(exe);
  for (const auto& arg : args) command += " " + quote(arg);
  command += " >" + quote(out_path) + " 2>&1";
  int status = std::system(command.c_str());
  CliResult result;
  result.rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  result.output = read_file(out_path);
  return result;
}

// Pids of live processes (not this one) whose /proc/<pid>/`file` contents satisfy `matches`.
inline std::vector<pid_t> processes_where(const char* file,
                                          const std::function<bool(const std::string&)>& matches) {
  std::vector<pid_t> found;
  DIR* proc = opendir("/proc");
  if (proc == nullptr) return found;
  while (dirent* entry = readdir(proc)) {
    char* end = nullptr;
    long pid = std::strtol(entry->d_name, &end, 10);
    if (pid <= 0 || *end != '\0' || pid == getpid()) continue;
    std::ifstream in(std::string("/proc/") + entry->d_name + "/" + file);
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (matches(text) && process_alive(static_cast<pid_t>(pid), 0)) {
      found.push_back(static_cast<pid_t>(pid));
    }
  }
  closedir(proc);
  return found;
}

// Pids of live processes whose environment holds DICE_CLUSTER_TEST_TOKEN=token.
inline std::vector<pid_t> processes_with_token(const std::string& token) {
  const std::string wanted = "DICE_CLUSTER_TEST_TOKEN=" + token;
  return processes_where("environ", [&](const std::string& env) {
    std::stringstream vars(env);
    std::string var;
    while (std::getline(vars, var, '\0')) {
      if (var == wanted) return true;
    }
    return false;
  });
}

// Pids of live processes whose command line holds `text` (processes started over ssh do not
// inherit the test's environment token, but carry the run id in their arguments).
inline std::vector<pid_t> processes_with_argument(const std::string& text) {
  return processes_where("cmdline", [&](const std::string& cmdline) {
    return cmdline.find(text) != std::string::npos;
  });
}

// The command line of `pid` with NULs as spaces; empty when it is gone.
inline std::string process_command_line(pid_t pid) {
  std::string text = read_file("/proc/" + std::to_string(pid) + "/cmdline");
  for (char& c : text) c = c == '\0' ? ' ' : c;
  return text;
}

constexpr const char* kSleepy = "sleepy_service_test_double";

// The overrides that make a run of test doubles: the state folder, the doubles as executables
// (sleepy learner and rollout, `reward_exe` as the reward worker) from `bin_dir`, quick restarts
// and a short drain.
inline std::vector<std::string> test_double_overrides(const std::string& state_dir,
                                                      const std::string& bin_dir,
                                                      const std::string& reward_exe) {
  return {
      "cluster.local.state_dir=" + state_dir,
      "cluster.local.bin_dir=" + bin_dir,
      std::string("cluster.local.executables={learner: ") + kSleepy + ", rollout: " + kSleepy +
          ", reward: " + reward_exe + "}",
      "cluster.local.restart_backoff_ms=20",
      "cluster.local.drain_timeout_ms=3000",
  };
}

// Polls `done` until true or `seconds` pass.
// The run's state file in `state_dir`; an empty state, and a test failure, when it cannot be read.
inline ClusterState read_state(const std::string& state_dir) {
  Result<ClusterState> read = read_state_file(state_dir);
  EXPECT_TRUE(read.ok()) << read.status().to_string();
  return read.ok() ? *read : ClusterState{};
}

// The entry of service `name` in `state`, or nullptr.
inline const ServiceState* find_service(const ClusterState& state, const std::string& name) {
  for (const auto& entry : state.services) {
    if (entry.name == name) return &entry;
  }
  return nullptr;
}

inline bool poll_until(const std::function<bool()>& done, double seconds = 15) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (std::chrono::steady_clock::now() < deadline) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return done();
}

// Each test double prints "<double> args: ..." once its signal handling is in place, a moment
// `up` (or a restart) does not wait for: it returns once the processes exist. A test that checks
// how services end waits until every service of the run printed that line once per start, or a
// slow start takes the SIGTERM unhandled (seen under load: "killed by signal 15" where the double
// exits 0). `cli` runs dice-cluster with the given arguments.
template <typename Cli>
bool wait_until_doubles_handle_signals(Cli&& cli, const std::string& state_dir) {
  return poll_until([&] {
    for (const auto& service : read_state(state_dir).services) {
      if (service.role == "dash") continue;  // dice-dash handles SIGTERM from its start
      const std::string log = cli({"logs", service.name, "--state-dir", state_dir}).output;
      int starts = 0;
      for (auto at = log.find(" args:"); at != std::string::npos; at = log.find(" args:", at + 1)) {
        ++starts;
      }
      if (starts < service.restarts + 1) return false;
    }
    return true;
  });
}

// cluster.dash's dice-dash answering on `port`: its /api/runs once it answers 200 (status 0 when
// it never did within the poll's time). The run's log is missing then (the test doubles never
// write it), which dice-dash reports as the log's state.
inline testing_util::HttpResult dashboard_runs(int port) {
  testing_util::HttpResult runs;
  poll_until([&] {
    runs = testing_util::http_get(port, "/api/runs");
    return runs.status == 200;
  });
  return runs;
}

}  // namespace dice::cluster::cli_test
