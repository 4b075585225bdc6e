// Sandbox: run one untrusted command (a candidate's evaluation, a compile, a static check) as a
// child process that cannot take the worker down with it.
//
// What the child gets, in order of setup (Linux; the worker runs as root here and on GPU nodes):
//   - new PID and mount namespaces (clone flags) and a network namespace of the run's own: one
//     from NetnsPool (sandbox_netns.h), joined with setns() and checked clean before another run
//     gets it, which is cheaper than creating and destroying one per run. Killing the child,
//     PID 1 of its namespace, kills everything it spawned, even processes that left its process
//     group; the network namespace has only a loopback that is down, so every connect() fails;
//     the mount namespace remounts /tmp, /var/tmp and /dev/shm read-only with the scratch
//     directory bound back read-write on top. The namespace's PID 1 is a minimal init that forks
//     the command and relays its wait status (PID 1 would ignore the command's own fatal
//     signals). Not permitted (no root)? A plain fork, and a warning logged once.
//   - rlimits: RLIMIT_AS (memory), RLIMIT_CPU, RLIMIT_FSIZE, RLIMIT_NOFILE, RLIMIT_NPROC.
//   - an unprivileged uid (nobody by default) when the worker is root: RLIMIT_NPROC counts the
//     processes of the child's real uid machine-wide and the kernel does not enforce it for root,
//     so without the switch a fork bomb would not be stopped. Concurrent sandboxes sharing one uid
//     share that count: give each slot its own uid (SandboxSpec::uid) where that matters.
//   - a private scratch directory (created per run, owned by the child's uid, removed after) as
//     cwd, HOME and TMPDIR.
//   - an environment reduced to an allow-list (kEnvAllowList in sandbox.cc) plus spec.env.
//   - stdin from /dev/null (or, with SandboxSpec::input_pipe, a socket the worker writes a job
//     into later: see SandboxProcess); stdout and stderr captured, each capped (the head is kept,
//     then the last kTailBytes; the bytes dropped in between are counted), so a flood cannot
//     exhaust memory.
// The parent enforces the wall-clock timeout by SIGKILL.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/status.h"
#include "schemas/verdict.capnp.h"

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
  // Namespaces: network, PID and mount (see above). Default: true
  bool isolate = true;
  // Keep the worker's network (no network namespace) even when isolating. Default: false
  bool allow_network = false;
  // Create and destroy a network namespace for this run (clone(CLONE_NEWNET), the cost
  // NetnsPool avoids) instead of leasing one from the pool; sandbox_bench compares the two.
  // Default: false
  bool fresh_network_namespace = false;
  // uid/gid the child runs as when the worker is root; -1 = keep root; kUniqueSandboxUid = a uid
  // of its own for this run (SandboxUid). Default: kUniqueSandboxUid
  int uid = kUniqueSandboxUid;
  int gid = kUniqueSandboxUid;
  // stdin is a socket the worker writes to (SandboxProcess::send_input) instead of /dev/null.
  // Default: false
  bool input_pipe = false;
};

// `spec` for a trusted script that only parses candidate text with Python's ast (static checks,
// source extraction) and never runs it: rlimits, a uid of its own and a private scratch folder
// stay, namespaces go (they guard against running code, which a parse does not do). Twelve
// concurrent parser runs with namespaces timed out at 30 s on the H200 node; the likely cause,
// reproduced on the dev VM, was the namespace init's glibc fork() hanging on a copied malloc
// lock (fixed, see raw_fork in sandbox.cc), not the kernel's namespace cost.
SandboxSpec parser_sandbox(SandboxSpec spec);

struct SandboxResult {
  int exit_code = -1;  // when the child exited normally, else -1
  int signal = 0;      // the signal that killed it, else 0
  bool timed_out = false;
  double wall_seconds = 0;
  std::string stdout_text;
  std::string stderr_text;
  bool output_truncated = false;  // some bytes of stdout or stderr were dropped
  bool isolated = false;          // namespaces were in effect
  bool unprivileged = false;      // the child ran under a non-root uid
  bool pooled_network = false;    // the child joined a network namespace from NetnsPool

  bool succeeded() const { return !timed_out && signal == 0 && exit_code == 0; }
};

class NetnsLease;

// One sandboxed process, started now and finished later. Its scratch directory, uid and network
// namespace stay leased to it until it is destroyed. With SandboxSpec::input_pipe the worker can
// start a process before it has the work for it, and hand the work over once the process says it
// is ready: the reward service starts evaluate.py (python, torch and the CUDA context, seconds
// of start-up) while the previous candidate of the slot still runs. spec.timeout_seconds does not
// apply while the process waits for its work; wait() takes the limit.
class SandboxProcess {
 public:
  // Everything up to the child's exec: scratch directory with spec.files, uid, namespaces,
  // rlimits. Errors only for the worker's own problems, as run_sandboxed().
  static Result<std::unique_ptr<SandboxProcess>> start(const SandboxSpec& spec);
  ~SandboxProcess();  // kills the process if it still runs; removes its scratch directory
  SandboxProcess(const SandboxProcess&) = delete;
  SandboxProcess& operator=(const SandboxProcess&) = delete;

  const std::string& scratch() const { return scratch_; }
  // More files in the scratch directory, owned by the run's uid.
  Status add_files(const std::vector<std::pair<std::string, std::string>>& files);
  // Reads stdout until the child prints `line` on a line of its own. An error when the child
  // ends or `timeout_seconds` pass first (the process is left as it is; destroy or wait() it).
  Status wait_for_line(const std::string& line, double timeout_seconds);
  // Writes `text` to the child's stdin (input_pipe) and closes it, or, with `keep_open`, leaves it
  // open for more.
  Status send_input(const std::string& text, bool keep_open = false);
  // Blocks until the child ends, or kills it `timeout_seconds` from now. Output read before
  // (wait_for_line) is part of the result, without the awaited line; wall_seconds counts from
  // this call. Once per process.
  SandboxResult wait(double timeout_seconds);

 private:
  SandboxProcess() = default;
  void kill_and_reap();

  SandboxSpec spec_;
  std::unique_ptr<SandboxUid> uid_lease_;
  int uid_ = -1, gid_ = -1;
  std::string scratch_;
  bool own_scratch_ = false;
  std::unique_ptr<NetnsLease> netns_;
  pid_t pid_ = -1;
  int pidfd_ = -1, out_fd_ = -1, err_fd_ = -1, status_fd_ = -1, input_fd_ = -1;
  bool reaped_ = false;
  int wait_status_ = 0;
  std::string early_stdout_;  // read by wait_for_line
  SandboxResult result_;      // isolated, unprivileged, pooled_network set at start
};

// Runs spec.argv; blocks until it ends or times out. Errors only for the worker's own
// problems (cannot create the scratch directory, fork fails); everything the command does is in
// the result.
Result<SandboxResult> run_sandboxed(const SandboxSpec& spec);

// The failure class of an unsuccessful run, from what the OS and the child's stderr tell:
// timeout; resourceLimit (SIGXCPU, SIGXFSZ, SIGKILL without our timeout, MemoryError, bad_alloc,
// "Resource temporarily unavailable" from fork); sandboxViolation (network unreachable,
// permission denied / read-only file system on a write); crashed (any other signal);
// internalError when the sandbox itself could not start the command; NONE when
// none of these applies (a plain non-zero exit is the caller's to interpret).
schema::FailureClass classify_sandbox_failure(const SandboxResult& result);

// A short human-readable reason for the log/verdict, e.g. "killed by signal 9 (SIGKILL)".
std::string describe_sandbox_result(const SandboxResult& result);

}  // namespace dice

namespace dice {

// {name, contents} of files under `dir`, for SandboxSpec::files: the reward service's scripts
// travel into each scratch directory, so the sandbox uid needs no access to the install folder.
Result<std::vector<std::pair<std::string, std::string>>> read_files_for_sandbox(
    const std::string& dir, const std::vector<std::string>& names);

}  // namespace dice
