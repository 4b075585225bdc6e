// Sandbox: run one untrusted command (a candidate's evaluation, a compile) as a child process that
// cannot take the worker down with it, and cannot reach anything of the host it was not given.
//
// What an isolated child gets (Linux, the worker root, as here, in CI and on GPU nodes; the order
// of setup and why it is that order: sandbox_child.h):
//   - namespaces: PID (the child is PID 1 of its own: killing it kills everything it spawned, even
//     processes that left its process group), mount, IPC (System V objects die with the run),
//     UTS (host name dice-sandbox), network (a namespace of the run's own, from NetnsPool
//     (sandbox_netns.h), joined with setns() and checked clean before another run gets it, or
//     created per run; only a loopback that is down, so every connect() fails) and user: the
//     command runs as the run's uid mapped to itself, with no capability and setgroups denied.
//     The namespace's PID 1 is a minimal init that forks the command and relays its wait status
//     (PID 1 would ignore the command's own fatal signals).
//   - a root of its own (sandbox_root.h): a tmpfs with the system folders, the toolchain and the
//     interpreter's import paths read-only, a synthetic /etc, fresh /proc and /sys, a minimal /dev
//     (GPU nodes of SandboxSpec::gpu_devices only), private /tmp and /dev/shm, and the scratch
//     directory read-write at its host path. No /run, /var, /home, no other run's files; of the
//     driver, no NVML library and only the run's own GPUs in /proc/driver/nvidia
//     (sandbox_driver_view.h).
//   - no_new_privs and a seccomp filter (sandbox_seccomp.h): no new namespaces, mounts, ptrace,
//     keyring, bpf, io_uring, module loading.
//   - a cgroup of its own with memory.max and pids.max where the host has cgroup v2 with those
//     controllers (sandbox_cgroup.h, SandboxSpec::cgroups).
//   - rlimits: RLIMIT_AS (memory), RLIMIT_CPU, RLIMIT_FSIZE, RLIMIT_NOFILE, RLIMIT_NPROC.
//   - an unprivileged uid of its own (SandboxUid): RLIMIT_NPROC counts the processes of the
//     child's uid and the kernel does not enforce it for root, so without the switch a fork bomb
//     would not be stopped.
//   - a private scratch directory (created per run, owned by the child's uid, removed after) as
//     cwd, HOME and TMPDIR.
//   - an environment reduced to an allow-list (kEnvAllowList in sandbox.cc) plus spec.env.
//   - stdin from /dev/null (or, with SandboxSpec::input_pipe, a socket the worker writes a job
//     into later: see SandboxProcess); stdout and stderr captured, each capped (the head is kept,
//     then the last kTailBytes; the bytes dropped in between are counted), so a flood cannot
//     exhaust memory.
// It fails closed: when any of these layers cannot be set up (not root, a namespace refused, a
// path of the root missing, the filter refused, cgroups: required on a host without them), the
// command is not run and SandboxResult::unavailable says which layer and why
// (reward/run_failure.h reads that as the verdict sandboxUnavailable). Never a run with less
// isolation.
// SandboxSpec::isolate = false (parser_sandbox, the worker's own probes, tests) keeps only the
// rlimits, the uid switch and the scratch directory.
// The parent enforces the wall-clock timeout by SIGKILL. The child dies with the worker
// (PR_SET_PDEATHSIG, checked against the race with the worker's death: sandbox_child.h), and
// with the isolated child, PID 1 of its namespace, everything it started: a worker killed
// mid-candidate (the supervisor's SIGKILL, the OOM killer) leaves no process of its runs behind.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "reward/sandbox/sandbox_cgroup.h"
#include "reward/sandbox/sandbox_driver_view.h"

namespace dice {

// SandboxSpec::uid value: lease a uid of its own for the run (see SandboxUid).
constexpr int kUniqueSandboxUid = -2;

// A uid (used as gid too) of its own for one run or one build, from [kSandboxUidBase,
// kSandboxUidBase + kSandboxUidCount): RLIMIT_NPROC then counts that run's processes and threads
// only (with one shared uid, eight concurrent torch processes exhausted it and CUDA failed to
// start with error 304 on the H200 node), and concurrent candidates cannot read or write each
// other's scratch files. The range sits above Debian's normal users (1000-59999) and below the
// 16-bit limit many container uid maps have. Leases are returned on destruction.
constexpr int kSandboxUidBase = 61000;
constexpr int kSandboxUidCount = 1000;
class SandboxUid {
 public:
  SandboxUid();  // waits while all kSandboxUidCount uids are leased
  ~SandboxUid();
  SandboxUid(const SandboxUid&) = delete;
  SandboxUid& operator=(const SandboxUid&) = delete;
  int uid() const { return uid_; }

 private:
  int uid_;
};

struct SandboxSpec {
  // argv[0] is looked up in PATH when it has no '/'. Required.
  std::vector<std::string> argv;
  // Extra "NAME=value" entries on top of the allow-listed environment. Default: none
  std::vector<std::string> env;
  // Files to place in the scratch directory before the run: {relative name, contents}.
  std::vector<std::pair<std::string, std::string>> files;
  // Working directory to use instead of a fresh scratch directory (kept after the run; the
  // child must be able to write there). Default: empty = fresh scratch directory
  std::string workdir;
  // Where fresh scratch directories are created. Default: /tmp
  std::string scratch_root = "/tmp";
  // Wall-clock limit in seconds. Default: 60
  double timeout_seconds = 60;
  // Memory limit in MiB; 0 = no limit. Default: 32768
  std::int64_t memory_limit_mb = 32768;
  // Which rlimit memory_limit_mb sets. RLIMIT_AS (false) counts every mapping; CUDA reserves
  // address space far beyond device memory at context creation, so GPU processes use
  // RLIMIT_DATA (true), which counts only private writable memory. Default: false
  bool limit_data_not_address_space = false;
  // RLIMIT_CPU in seconds; 0 = no limit. Default: 600
  int cpu_time_seconds = 600;
  // RLIMIT_FSIZE in MiB, and the cap on each captured stream. Default: 64
  std::int64_t max_output_mb = 64;
  // RLIMIT_NPROC (processes and threads of the child's uid). Default: 64
  int max_processes = 64;
  // RLIMIT_NOFILE. Default: 256
  int max_open_files = 256;
  // Every layer above (namespaces, own root, seccomp, cgroup); false = rlimits, uid and scratch
  // only, for trusted commands (parser_sandbox, the worker's probes) and tests. Default: true
  bool isolate = true;
  // Host paths bound read-only into the run's root at their own paths (a toolchain's include
  // folders, reward.sandbox.root_binds), besides what the root has anyway (sandbox_root.h); one
  // that does not exist: the run does not start (unavailable). Default: none
  std::vector<std::string> read_only_paths;
  // Host files that read empty in the run's root (RootRequest::masked_files), besides NVML's
  // libraries, which every isolated run has masked; one missing or outside the root is skipped.
  // Default: none
  std::vector<std::string> masked_files;
  // Host directories that appear in the run's root holding only some of their entries
  // (RootRequest::pruned_dirs), besides /proc/driver/nvidia, which every isolated run gets cut
  // down to its own GPUs; one not in the root is skipped. Default: none
  std::vector<PrunedDir> pruned_dirs;
  // Host GPU ordinals (CUDA_VISIBLE_DEVICES numbering) whose device nodes the run gets; inside
  // they are CUDA devices 0..n-1, and CUDA_VISIBLE_DEVICES says so. Default: none (no GPU node)
  std::vector<int> gpu_devices;
  // A cgroup of the run's own (sandbox_cgroup.h): kAuto where the host allows, kRequired or
  // not run, kOff. Default: kAuto
  SandboxCgroups cgroups = SandboxCgroups::kAuto;
  // Size of the run's private /tmp and of its /dev/shm, each, in MiB. Default: 256
  std::int64_t tmpfs_size_mb = 256;
  // Keep the worker's network (no network namespace) even when isolating. Default: false
  bool allow_network = false;
  // uid/gid the child runs as when the worker is root; -1 = keep root (isolated: uid 0 of its
  // user namespace, mapped to the host's root, with no capability); kUniqueSandboxUid = a uid
  // of its own for this run (SandboxUid). Default: kUniqueSandboxUid
  int uid = kUniqueSandboxUid;
  int gid = kUniqueSandboxUid;
  // stdin is a socket the worker writes to (SandboxProcess::send_input) instead of /dev/null.
  // Default: false
  bool input_pipe = false;
};

// `spec` for a trusted script that only parses candidate text with Python's ast (static checks,
// source extraction) and never runs it: rlimits, a uid of its own and a private scratch folder
// stay, the other layers go (they guard against running code, which a parse does not do). Twelve
// concurrent parser runs with namespaces timed out at 30 s on the H200 node; the likely cause,
// reproduced on the dev VM, was the namespace init's glibc fork() hanging on a copied malloc
// lock (fixed, see raw_fork in sandbox_child.cc), not the kernel's namespace cost.
SandboxSpec parser_sandbox(SandboxSpec spec);

struct SandboxResult {
  int exit_code = -1;  // when the child exited normally, else -1
  int signal = 0;      // the signal that killed it, else 0
  bool timed_out = false;
  double wall_seconds = 0;
  std::string stdout_text;
  std::string stderr_text;
  bool output_truncated = false;  // some bytes of stdout or stderr were dropped
  // A layer could not be set up, so the command was not run (fail closed); the reason names the
  // layer, the step and errno, e.g. "root: bind /opt/x read-only: No such file or directory".
  bool unavailable = false;
  std::string unavailable_reason;
  // The layers in effect (when not unavailable):
  bool isolated = false;        // user, PID, mount, IPC, UTS and network namespaces
  bool private_root = false;    // the minimal root (sandbox_root.h)
  bool seccomp = false;         // no_new_privs, no capabilities, the system-call filter
  bool cgroup = false;          // memory.max and pids.max of a cgroup of its own
  bool unprivileged = false;    // the child ran under a non-root uid
  bool pooled_network = false;  // the child joined a network namespace from NetnsPool

  bool succeeded() const { return !timed_out && signal == 0 && exit_code == 0; }
};

class NetnsLease;
class RunCgroup;
class SandboxRoot;
struct ChildPlan;

// One sandboxed process, started now and finished later. Its scratch directory, uid and network
// namespace stay leased to it until it is destroyed. With SandboxSpec::input_pipe the worker can
// start a process before it has the work for it, and hand the work over once the process says it
// is ready: the reward service starts the judge and the runner (python, torch and the CUDA
// context, seconds of start-up) while the previous candidate of the slot still runs.
// spec.timeout_seconds does not apply while the process waits for its work; wait() takes the
// limit.
class SandboxProcess {
 public:
  // Everything up to the child's exec: scratch directory with spec.files, uid, namespaces,
  // root, rlimits. Errors only for the worker's own problems, as run_sandboxed(); a layer that
  // cannot be set up is no error: the command is not run, and wait() (at once, when the worker
  // knew before starting it) returns the result with `unavailable`.
  static Result<std::unique_ptr<SandboxProcess>> start(const SandboxSpec& spec);
  ~SandboxProcess();  // kills the process if it still runs; removes its scratch directory
  SandboxProcess(const SandboxProcess&) = delete;
  SandboxProcess& operator=(const SandboxProcess&) = delete;

  const std::string& scratch() const { return scratch_; }
  // The child's pid in the worker's PID namespace (isolated: the run's init), for tests and logs.
  pid_t pid() const { return pid_; }
  // More files in the scratch directory, owned by the run's uid.
  Status add_files(const std::vector<std::pair<std::string, std::string>>& files);
  // Reads stdout until the child prints `line` on a line of its own. An error when the child
  // ends or `timeout_seconds` pass first (the process is left as it is; destroy or wait() it).
  Status wait_for_line(const std::string& line, double timeout_seconds);
  // Reads stdout until a line that starts with one of `prefixes`, and returns it (without its
  // newline); it and every line before it are consumed (a process that serves one request after
  // another, the evaluation's judge, says each answer so). Errors as wait_for_line.
  Result<std::string> next_line_starting(const std::vector<std::string>& prefixes,
                                         double timeout_seconds);
  // What the process wrote to stderr while stdout was read (wait_for_line, next_line_starting),
  // at most its last 32 KiB, since the last call; wait() includes what was not taken.
  std::string take_stderr();
  // Writes `text` to the child's stdin (input_pipe) and closes it, or, with `keep_open`, leaves it
  // open for more. With `pass_fd` >= 0, a duplicate of that descriptor travels with the first
  // byte of `text` (SCM_RIGHTS): the evaluation's judge and runner get their channel this way.
  Status send_input(const std::string& text, bool keep_open = false, int pass_fd = -1);
  // SIGKILL now (from any thread); wait() in another thread then returns. A no-op once reaped.
  void kill_now();
  // Blocks until the child ends, or kills it `timeout_seconds` from now. Output read before
  // (wait_for_line) is part of the result, without the awaited line; wall_seconds counts from
  // this call. Once per process.
  SandboxResult wait(double timeout_seconds);

 private:
  struct ChildEnds;  // the child's ends of its pipes until it has started (sandbox.cc)

  SandboxProcess() = default;
  void kill_and_reap();
  // The steps of start(), in order.
  void choose_identity(const SandboxSpec& spec, bool root);
  Status prepare_scratch(const SandboxSpec& spec, bool drop);
  Status open_pipes(bool input_pipe, ChildEnds* ends);
  void mark_unavailable(const std::string& reason);
  // The layers set up before clone: the root, a cgroup, a network namespace and the id maps.
  // Nothing, or why a layer cannot be had (the command is then not run).
  std::optional<std::string> prepare_isolation(const SandboxSpec& spec, const std::string& exe,
                                               const std::vector<std::string>& env, bool drop,
                                               bool* own_netns);
  // A pooled network namespace into netns_ where the spec wants one; true when the run must
  // create its own instead (clone(CLONE_NEWNET)).
  bool lease_network_namespace(const SandboxSpec& spec, bool drop);
  // The isolated part of the child's plan: the namespaces to clone into, the layers to enter.
  void plan_isolated(bool own_netns, ChildPlan* plan);
  // The steps of wait(): reaps the child if it has exited (true then); what the isolated run's
  // init reported on its status pipe.
  bool reap_if_exited();
  // Reads stdout into early_stdout_ (and stderr into stderr_since_) until `found` says what it
  // looks for is there; `what` names it in errors.
  Status read_stdout_until(const std::function<bool()>& found, const std::string& what,
                           double timeout_seconds);
  void read_init_messages(SandboxResult* result);

  SandboxSpec spec_;
  std::unique_ptr<SandboxUid> uid_lease_;
  int uid_ = -1, gid_ = -1;
  std::string scratch_;
  bool own_scratch_ = false;
  std::unique_ptr<NetnsLease> netns_;
  std::unique_ptr<SandboxRoot> root_;  // the plan the child walked (for failure reasons)
  std::unique_ptr<RunCgroup> cgroup_;  // removed after the init is reaped
  std::string uid_map_, gid_map_;      // what the init writes for the command
  pid_t pid_ = -1;
  int pidfd_ = -1, out_fd_ = -1, err_fd_ = -1, status_fd_ = -1, input_fd_ = -1;
  bool reaped_ = false;
  int wait_status_ = 0;
  std::string early_stdout_;  // read by wait_for_line
  std::string stderr_since_;  // drained while stdout is read (take_stderr)
  SandboxResult result_;      // isolated, unprivileged, pooled_network set at start
};

// Runs spec.argv; blocks until it ends or times out. Errors only for the worker's own
// problems (cannot create the scratch directory, fork fails); everything the command does is in
// the result.
Result<SandboxResult> run_sandboxed(const SandboxSpec& spec);

// A short human-readable reason for the log/verdict, e.g. "killed by signal 9 (SIGKILL)".
std::string describe_sandbox_result(const SandboxResult& result);

}  // namespace dice

namespace dice {

// {name, contents} of files under `dir`, for SandboxSpec::files: the reward service's scripts
// travel into each scratch directory, so the sandbox uid needs no access to the install folder.
Result<std::vector<std::pair<std::string, std::string>>> read_files_for_sandbox(
    const std::string& dir, const std::vector<std::string>& names);

}  // namespace dice
