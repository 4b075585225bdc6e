// ChildProcess: a program a test starts, killed (SIGKILL) and reaped when it goes out of scope, so
// a failing test never leaves processes behind. Shared by the integration tests that run real
// services and test doubles.
#pragma once

#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

namespace dice::testing_util {

class ChildProcess {
 public:
  // Runs `path` with `args`; with `log`, its stdout and stderr go to that file.
  ChildProcess(const std::string& path, const std::vector<std::string>& args,
               const std::string& log = "") {
    pid_ = fork();
    if (pid_ == 0) {
      prctl(PR_SET_PDEATHSIG, SIGKILL);  // never outlive a crashed test
      if (!log.empty()) {
        if (FILE* out = std::freopen(log.c_str(), "w", stdout)) dup2(fileno(out), STDERR_FILENO);
      }
      std::vector<char*> argv;
      argv.push_back(const_cast<char*>(path.c_str()));
      for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
      argv.push_back(nullptr);
      execv(path.c_str(), argv.data());
      _exit(127);
    }
  }
  ~ChildProcess() { kill(); }
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  pid_t pid() const { return pid_; }
  void kill() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
    pid_ = -1;
  }
  void signal(int sig) {
    if (pid_ > 0) ::kill(pid_, sig);
  }
  // Waits for the process to exit by itself: its exit status (128 + signal when a signal ended
  // it), or -1 at the deadline.
  int wait_exit(std::chrono::milliseconds deadline) {
    const auto end = std::chrono::steady_clock::now() + deadline;
    while (pid_ > 0 && std::chrono::steady_clock::now() < end) {
      int status = 0;
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return -1;
  }

 private:
  pid_t pid_ = -1;
};

}  // namespace dice::testing_util
