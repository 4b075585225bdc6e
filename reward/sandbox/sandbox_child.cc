#include "reward/sandbox/sandbox_child.h"

#include <fcntl.h>
#include <linux/capability.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <thread>

#include "reward/sandbox/sandbox_netns.h"
#include "reward/sandbox/sandbox_root.h"
#include "reward/sandbox/sandbox_seccomp.h"

namespace dice {
namespace {

void set_limit(int resource, rlim_t value) {
  struct rlimit rl;
  rl.rlim_cur = value;
  rl.rlim_max = value;
  setrlimit(resource, &rl);
}

// fork() without glibc: glibc's fork() takes its malloc arena and stdio locks first, and in a
// child made by a raw clone of the multi-threaded worker those locks are copies, held for good if
// another worker thread held one at the clone. That hung the namespace's init forever: with
// other threads allocating, 283 of 400 isolated runs of /bin/true hung until their timeout on
// the dev VM; it is most likely why twelve concurrent runs on the H200 node did not finish 36 runs
// in 60 s.
pid_t raw_fork() {
  return static_cast<pid_t>(syscall(SYS_clone, SIGCHLD, nullptr, nullptr, nullptr, nullptr));
}

void write_str(int fd, const char* s) {
  ssize_t ignored = write(fd, s, strlen(s));
  (void)ignored;
}

// Reports `step` (with the current errno) to the worker and ends this process: the command is
// not run.
[[noreturn]] void fail(int status_fd, int step) {
  const int message[3] = {kSetupFailedMessage, step, errno};
  ssize_t ignored = write(status_fd, message, sizeof(message));
  (void)ignored;
  _exit(126);
}

// PR_SET_PDEATHSIG(SIGKILL), then the check that the worker did not die before it was set (the
// signal would never come then): see sandbox_child.h. Ends this process when the worker is gone.
void die_with_worker(const ChildPlan& plan) {
  if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) != 0) _exit(125);
  if (plan.isolated) {
    // In its own PID namespace getppid() is 0; the worker's pidfd turns readable when it exits.
    if (plan.parent_pidfd < 0) return;
    pollfd worker{plan.parent_pidfd, POLLIN, 0};
    if (poll(&worker, 1, 0) > 0) _exit(125);
  } else if (getppid() != plan.parent_pid) {
    _exit(125);
  }
}

// "/proc/<pid>/<leaf>" into `buf`, without printf (it may lock).
void proc_path(char* buf, pid_t pid, const char* leaf) {
  char digits[16];
  int n = 0;
  for (unsigned v = static_cast<unsigned>(pid); n == 0 || v > 0; v /= 10) {
    digits[n++] = static_cast<char>('0' + v % 10);
  }
  char* at = stpcpy(buf, "/proc/");
  while (n > 0) *at++ = digits[--n];
  *at++ = '/';
  stpcpy(at, leaf);
}

int write_proc(pid_t pid, const char* leaf, const char* text) {
  char path[64];
  proc_path(path, pid, leaf);
  const int fd = open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  const size_t len = strlen(text);
  const ssize_t n = write(fd, text, len);
  const int err = errno;
  close(fd);
  errno = err;
  return n == static_cast<ssize_t>(len) ? 0 : -1;
}

// The init's side of the command's user namespace: maps the run's ids once the command has
// unshared, and answers 'y' (go on) or 'n' (end: the failure is reported).
void map_command_ids(const ChildPlan& plan, pid_t command, int from_command, int to_command) {
  char byte = 0;
  ssize_t n;
  do {
    n = read(from_command, &byte, 1);
  } while (n < 0 && errno == EINTR);
  if (n != 1) return;  // the command ended first, having reported why
  char answer = 'y';
  if (write_proc(command, "setgroups", "deny") != 0 ||
      write_proc(command, "uid_map", plan.uid_map) != 0 ||
      write_proc(command, "gid_map", plan.gid_map) != 0) {
    const int message[3] = {kSetupFailedMessage, kStepUserMap, errno};
    ssize_t ignored = write(plan.status_fd, message, sizeof(message));
    (void)ignored;
    answer = 'n';
  }
  ssize_t ignored = write(to_command, &answer, 1);
  (void)ignored;
}

// Capabilities of the command's user namespace: setresuid to an id that namespace has no root
// for keeps them, so they go explicitly (exec would compute empty sets anyway under
// no_new_privs; this leaves nothing to reason about).
int drop_capabilities() {
  if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) != 0) return -1;
  for (int cap = 0; cap < 64; ++cap) {
    if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0 && errno != EINVAL) return -1;
  }
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3] = {};
  return static_cast<int>(syscall(SYS_capset, &header, data));
}

void set_rlimits(const SandboxSpec& spec) {
  if (spec.memory_limit_mb > 0) {
    set_limit(spec.limit_data_not_address_space ? RLIMIT_DATA : RLIMIT_AS,
              rlim_t(spec.memory_limit_mb) << 20);
  }
  if (spec.cpu_time_seconds > 0) set_limit(RLIMIT_CPU, rlim_t(spec.cpu_time_seconds));
  set_limit(RLIMIT_FSIZE, rlim_t(spec.max_output_mb) << 20);
  set_limit(RLIMIT_NOFILE, rlim_t(spec.max_open_files));
  set_limit(RLIMIT_NPROC, rlim_t(spec.max_processes));
  set_limit(RLIMIT_CORE, 0);
}

[[noreturn]] void exec_command(const ChildPlan& plan) {
  syscall(SYS_close_range, 3U, ~0U, 0U);  // the status pipe too: the command cannot forge reports
  execve(plan.exe, plan.argv, plan.envp);
  write_str(2, "sandbox: exec failed: ");
  write_str(2, strerrordesc_np(errno));  // strerror() may translate, which locks
  write_str(2, "\n");
  _exit(127);
}

// The command of an isolated run, forked by the init inside the new root.
[[noreturn]] void isolated_command(const ChildPlan& plan, int to_init, int from_init) {
  const int status_fd = plan.status_fd;
  set_rlimits(*plan.spec);
  if (chdir(plan.scratch) != 0) fail(status_fd, kStepScratch);
  // Still root of the worker's user namespace: the supplementary groups go now (in the new
  // namespace, setgroups is denied).
  if (syscall(SYS_setgroups, 0, nullptr) != 0) fail(status_fd, kStepSwitchIds);
  if (unshare(CLONE_NEWUSER) != 0) fail(status_fd, kStepUserNamespace);
  char answer = 0;
  ssize_t n = write(to_init, "u", 1);
  if (n == 1) {
    do {
      n = read(from_init, &answer, 1);
    } while (n < 0 && errno == EINTR);
  }
  if (n != 1 || answer != 'y') _exit(126);  // the init reported why
  close(to_init);
  close(from_init);
  const int uid = plan.uid < 0 ? 0 : plan.uid;
  const int gid = plan.gid < 0 ? 0 : plan.gid;
  // Raw: they change this (single-threaded) process only, with no glibc bookkeeping.
  if (syscall(SYS_setresgid, gid, gid, gid) != 0 || syscall(SYS_setresuid, uid, uid, uid) != 0) {
    fail(status_fd, kStepSwitchIds);
  }
  if (drop_capabilities() != 0) fail(status_fd, kStepDropCapabilities);
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) fail(status_fd, kStepNoNewPrivs);
  if (install_seccomp(*plan.seccomp) != 0) fail(status_fd, kStepSeccomp);
  exec_command(plan);
}

[[noreturn]] void isolated_init(const ChildPlan& plan) {
  const int status_fd = plan.status_fd;
  // No credential change follows in the init (which would clear the parent-death signal): the
  // setting from child_main holds until it dies, and its namespace's processes with it.
  if (plan.netns_fd >= 0) {
    if (setns(plan.netns_fd, CLONE_NEWNET) != 0) fail(status_fd, kStepJoinNetns);
    // Checked here, in each run's own child, so checks run in parallel. Not as created? This
    // run gets a fresh namespace, and the parent discards the pooled one.
    if (!netns_is_pristine()) {
      if (unshare(CLONE_NEWNET) != 0) fail(status_fd, kStepReplaceNetns);
      const int message = kNetnsNotCleanMessage;
      ssize_t ignored = write(status_fd, &message, sizeof(message));
      (void)ignored;
    }
  }
  // Before the command exists, so everything it starts is counted from the first instruction.
  if (plan.cgroup_procs_fd >= 0 && write(plan.cgroup_procs_fd, "0", 1) != 1) {
    fail(status_fd, kStepCgroup);
  }
  if (sethostname(kSandboxHostname, sizeof(kSandboxHostname) - 1) != 0)
    fail(status_fd, kStepHostname);
  int root_step = 0;
  if (plan.root->enter(&root_step) != 0) fail(status_fd, kStepRoot + root_step);
  // Clone copied every descriptor the worker had open, among them the pipes of concurrent
  // runs: held here for this run's whole life, they kept those runs' readers from seeing EOF
  // (each waited up to its drain deadline). Keep only 0-2 (this run's own pipes, so EOF
  // comes when the init has exited) and the status pipe.
  syscall(SYS_close_range, 3U, static_cast<unsigned>(status_fd - 1), 0U);
  syscall(SYS_close_range, static_cast<unsigned>(status_fd + 1), ~0U, 0U);
  int to_init[2], to_command[2];
  if (pipe2(to_init, O_CLOEXEC) != 0 || pipe2(to_command, O_CLOEXEC) != 0) {
    fail(status_fd, kStepForkCommand);
  }
  // This process is PID 1 of the new namespace, and PID 1 ignores signals it has no handler
  // for (a candidate's own abort() or kill(getpid(), SIGSEGV) would not end it). So it stays
  // a minimal init: the command runs in a child, and its wait status goes to the parent
  // through status_fd. When this init exits, the kernel kills everything left in the
  // namespace.
  const pid_t command = raw_fork();
  if (command < 0) fail(status_fd, kStepForkCommand);
  if (command == 0) {
    close(to_init[0]);
    close(to_command[1]);
    isolated_command(plan, to_init[1], to_command[0]);
  }
  close(to_init[1]);
  close(to_command[0]);
  map_command_ids(plan, command, to_init[0], to_command[1]);
  close(to_init[0]);
  close(to_command[1]);
  for (;;) {
    int status = 0;
    pid_t w = waitpid(-1, &status, 0);
    if (w == command) {
      ssize_t ignored = write(status_fd, &status, sizeof(status));
      (void)ignored;
      _exit(0);
    }
    if (w < 0 && errno != EINTR) _exit(125);
  }
}

}  // namespace

std::string describe_setup_step(int step, int err, const SandboxRoot* root, int uid) {
  std::string what;
  switch (step) {
    case kStepJoinNetns:
      what = "network namespace: join the pooled namespace";
      break;
    case kStepReplaceNetns:
      what = "network namespace: replace an unclean pooled namespace";
      break;
    case kStepCgroup:
      what = "cgroup: join the run's cgroup";
      break;
    case kStepHostname:
      what = "UTS namespace: set the host name";
      break;
    case kStepForkCommand:
      what = "PID namespace: start the command under the namespace's init";
      break;
    case kStepScratch:
      what = "root: enter the scratch directory";
      break;
    case kStepUserNamespace:
      what = "user namespace: unshare(CLONE_NEWUSER)";
      break;
    case kStepUserMap:
      what = "user namespace: write the command's uid_map and gid_map";
      break;
    case kStepSwitchIds:
      what = "user namespace: switch to uid " + std::to_string(uid);
      break;
    case kStepDropCapabilities:
      what = "capabilities: drop them all";
      break;
    case kStepNoNewPrivs:
      what = "no_new_privs: prctl(PR_SET_NO_NEW_PRIVS)";
      break;
    case kStepSeccomp:
      what = "seccomp: install the system-call filter";
      break;
    default:
      what = step >= kStepRoot && root != nullptr ? "root: " + root->describe_step(step - kStepRoot)
                                                  : "setup step " + std::to_string(step);
  }
  return what + ": " + (strerrordesc_np(err) ? strerrordesc_np(err) : "unknown error") +
         " (errno " + std::to_string(err) + ")";
}

// Makes this process, and what it execs and forks, the kernel's first choice when the host runs
// out of memory (oom_score_adj 1000, the most; any process may raise its own): a candidate's
// runner, a compiler or a probe is what goes, never the worker, the learner or the rollout beside
// them. Per-run limits (rlimits, the cgroup) bound each run; this orders what several runs
// together, or a host limit the cgroup does not have, leave to the OOM killer. Best effort: a
// host without /proc keeps the inherited score.
void prefer_for_oom_killer() {
  const int fd = open("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC);
  if (fd < 0) return;
  write_str(fd, kSandboxOomScoreAdj);
  close(fd);
}

// Runs in the child between clone and exec: only async-signal-safe calls, no allocation (the
// worker is multi-threaded; another thread may hold the allocator's lock). In the isolated case
// the child comes from a raw clone, so glibc still believes the worker's threads exist in it:
// glibc's fork() would take every malloc arena lock and setuid() would signal those threads, so
// both go through raw syscalls here (see raw_fork).
void child_main(const ChildPlan& plan) {
  die_with_worker(plan);
  prefer_for_oom_killer();
  setpgid(0, 0);
  dup2(plan.in_fd, 0);
  dup2(plan.out_fd, 1);
  dup2(plan.err_fd, 2);
  if (plan.isolated) isolated_init(plan);
  // Not isolated (parser_sandbox, the worker's own probes): rlimits and the uid switch only.
  set_rlimits(*plan.spec);
  if (chdir(plan.scratch) != 0) {
    write_str(2, "sandbox: cannot enter the scratch directory\n");
    _exit(126);
  }
  if (plan.drop) {
    if (syscall(SYS_setgroups, 0, nullptr) != 0 || syscall(SYS_setgid, plan.gid) != 0 ||
        syscall(SYS_setuid, plan.uid) != 0) {
      write_str(2, "sandbox: cannot switch to the unprivileged uid\n");
      _exit(126);
    }
    die_with_worker(plan);  // the uid switch cleared the setting
  }
  exec_command(plan);
}

namespace {

// The one thread that forks every sandboxed child (sandbox_child.h: the parent-death signal
// follows the forking thread). Started on first use, never ended, and never destroyed, so no
// static destructor waits for it at exit.
class Spawner {
 public:
  // The process's spawner. A process forked from one that had a spawner (a test's fork, a
  // death test) has none running, since fork copies only the calling thread: it gets its own.
  static Spawner& instance() {
    static std::mutex mutex;
    static Spawner* spawner = nullptr;
    static pid_t owner = -1;
    std::lock_guard<std::mutex> lock(mutex);
    if (spawner == nullptr || owner != getpid()) {
      spawner = new Spawner();
      owner = getpid();
    }
    return *spawner;
  }

  pid_t spawn(const ChildPlan& plan) {
    std::lock_guard<std::mutex> one_at_a_time(call_mutex_);
    std::unique_lock<std::mutex> lock(mutex_);
    request_ = &plan;
    wake_.notify_one();
    done_.wait(lock, [&] { return request_ == nullptr; });
    errno = error_;
    return pid_;
  }

 private:
  Spawner() {
    std::thread([this] { run(); }).detach();
  }

  [[noreturn]] void run() {
    std::unique_lock<std::mutex> lock(mutex_);
    for (;;) {
      wake_.wait(lock, [&] { return request_ != nullptr; });
      const ChildPlan& plan = *request_;
      // Isolated: like fork() (no new stack), plus new namespaces (sandbox.cc says which).
      const pid_t pid = plan.isolated
                            ? static_cast<pid_t>(syscall(SYS_clone, plan.clone_flags, nullptr,
                                                         nullptr, nullptr, nullptr))
                            : fork();
      if (pid == 0) child_main(plan);
      error_ = errno;
      pid_ = pid;
      request_ = nullptr;
      done_.notify_all();
    }
  }

  std::mutex call_mutex_;  // one spawn at a time
  std::mutex mutex_;
  std::condition_variable wake_;
  std::condition_variable done_;
  const ChildPlan* request_ = nullptr;  // the plan to fork; null once forked
  pid_t pid_ = -1;
  int error_ = 0;
};

}  // namespace

pid_t start_child(const ChildPlan& plan) {
  return Spawner::instance().spawn(plan);
}

}  // namespace dice
