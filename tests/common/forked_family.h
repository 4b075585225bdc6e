// A child process that forks a grandchild, both sleeping until killed: a process tree of two
// generations for tests of what reads or watches one (common/process_tree.h,
// reward/evaluate/gpu_memory_watch.h). Both are killed and reaped on destruction.
#pragma once

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

namespace dice {

struct ForkedFamily {
  pid_t child = -1, grandchild = -1;  // -1 when a fork failed

  ForkedFamily() {
    int fds[2];
    if (pipe(fds) != 0) return;
    child = fork();
    if (child == 0) {
      const pid_t inner = fork();
      if (inner == 0) {
        pause();
        _exit(0);
      }
      (void)!write(fds[1], &inner, sizeof inner);  // the grandchild's pid, to the parent
      pause();
      _exit(0);
    }
    close(fds[1]);
    if (child < 0 || read(fds[0], &grandchild, sizeof grandchild) != sizeof grandchild) {
      grandchild = -1;
    }
    close(fds[0]);
  }
  ~ForkedFamily() {
    if (grandchild > 0) kill(grandchild, SIGKILL);
    if (child > 0) {
      kill(child, SIGKILL);
      waitpid(child, nullptr, 0);
    }
  }
  ForkedFamily(const ForkedFamily&) = delete;
  ForkedFamily& operator=(const ForkedFamily&) = delete;
};

}  // namespace dice
