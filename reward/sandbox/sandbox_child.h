// What a sandboxed run's child does between clone and exec (sandbox.h), and how it tells the
// worker which layer failed.
//
// Isolated (SandboxSpec::isolate), the child is PID 1 of a fresh PID namespace, in fresh mount,
// IPC and UTS namespaces, still root of the worker's user namespace (what joining a pooled
// network namespace, owned by that user namespace, needs). In order:
//   init: join the pooled network namespace (and check it is clean) -> join the run's cgroup ->
//         set the host name -> build the root and pivot_root into it (sandbox_root.h) -> fork the
//         command -> write the command's uid_map/gid_map once it has its user namespace -> relay
//         its wait status.
//   command: rlimits -> cwd = scratch -> no supplementary groups -> unshare(CLONE_NEWUSER) ->
//         (the init maps the run's uid and gid to themselves, setgroups denied) -> setresgid,
//         setresuid to the run's ids -> every capability dropped (bounding, ambient, permitted) ->
//         no_new_privs -> seccomp (sandbox_seccomp.h) -> exec.
// A step that fails ends the child before exec: the command never runs unprotected. The failing
// process writes {kSetupFailedMessage, step, errno} to the status pipe; the worker turns it into
// SandboxResult::unavailable with describe_setup_step()'s words.
//
// The child dies with its worker. Its first step sets PR_SET_PDEATHSIG(SIGKILL), then checks
// that the worker still lives (it may have died between clone and prctl, and the signal would
// never come): the isolated init through a pidfd of the worker (in its new PID namespace the
// worker has no pid), a plain child by getppid(). The kernel clears the setting when a process's
// uid or gid changes, so a plain child that switches uid sets and checks it again afterwards.
// Isolated, the init is PID 1 of the run's PID namespace: when it dies the kernel kills every
// process left in the namespace, the command and whatever it forked, daemonised or not. A plain
// child's own children are not covered (it is for trusted commands that start none).
// The signal fires when the *thread* that forked the child ends, not its process, so every child
// is forked by one spawner thread that lives as long as the worker (start_child()): a pool thread
// that started a process and ended would otherwise kill it under the thread that took it over.
//
// Everything here is system calls on memory prepared before clone: the worker is
// multi-threaded, and another thread may have held the allocator's lock at the clone.
#pragma once

#include <linux/filter.h>

#include <string>

#include "reward/sandbox/sandbox.h"

namespace dice {

class SandboxRoot;

// The status pipe carries ints: the command's wait status (below 0x10000), or these.
constexpr int kNetnsNotCleanMessage = 0x10000;  // the pooled namespace was replaced
constexpr int kSetupFailedMessage = 0x20000;    // followed by the step and errno

// The oom_score_adj of every sandboxed process (the most there is): when the host runs out of
// memory, the OOM killer takes a sandboxed run before the worker that started it.
inline constexpr char kSandboxOomScoreAdj[] = "1000";

// Steps of the setup; kStepRoot + i is step i of the root's plan.
enum SetupStep : int {
  kStepJoinNetns = 1,
  kStepReplaceNetns,
  kStepCgroup,
  kStepHostname,
  kStepForkCommand,
  kStepScratch,
  kStepUserNamespace,
  kStepUserMap,
  kStepSwitchIds,
  kStepDropCapabilities,
  kStepNoNewPrivs,
  kStepSeccomp,
  kStepRoot = 1000,
};

// "layer: what: error" for the run's unavailable_reason.
std::string describe_setup_step(int step, int err, const SandboxRoot* root, int uid);

// Everything the child needs, made before clone.
struct ChildPlan {
  const SandboxSpec* spec = nullptr;  // rlimits
  int uid = -1;                       // the run's uid and gid; -1: keep the worker's
  int gid = -1;
  bool drop = false;  // switch to uid/gid (the worker is root)
  const char* scratch = nullptr;
  const char* exe = nullptr;
  char* const* argv = nullptr;
  char* const* envp = nullptr;
  int in_fd = -1, out_fd = -1, err_fd = -1, status_fd = -1;
  pid_t parent_pid = -1;  // the worker: a plain child checks getppid() against it
  int parent_pidfd = -1;  // the worker's pidfd: the isolated init checks it (-1: none)
  // Isolated only:
  bool isolated = false;
  long clone_flags = 0;      // the namespaces clone() makes, with SIGCHLD
  int netns_fd = -1;         // a pooled network namespace to join
  int cgroup_procs_fd = -1;  // the run's cgroup.procs
  const SandboxRoot* root = nullptr;
  const sock_fprog* seccomp = nullptr;
  const char* uid_map = nullptr;  // "<inside> <outside> 1\n"
  const char* gid_map = nullptr;
};

[[noreturn]] void child_main(const ChildPlan& plan);

// Forks (isolated: clones with plan.clone_flags) on the spawner thread, which lives as long as
// the worker (a process forked from the worker gets one of its own), and runs child_main(plan) in
// the child. The child's pid, or -1 with errno set.
pid_t start_child(const ChildPlan& plan);

}  // namespace dice
