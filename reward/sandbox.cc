#include "reward/sandbox.h"

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <vector>

#include "common/log.h"
#include "common/seconds_since.h"
#include "reward/sandbox_netns.h"

namespace dice {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

// The user name a sandboxed process sees in USER and LOGNAME.
constexpr const char* kSandboxUserName = "dice-sandbox";

// Variables a candidate may see from the worker's environment. Everything else (tokens, cloud
// credentials, the worker's own config) stays out.
constexpr const char* kEnvAllowList[] = {"PATH",
                                         "LANG",
                                         "LC_ALL",
                                         "LC_CTYPE",
                                         "CUDA_VISIBLE_DEVICES",
                                         "CUDA_HOME",
                                         "CUDA_PATH",
                                         "LD_LIBRARY_PATH",
                                         "NVIDIA_VISIBLE_DEVICES",
                                         "NVIDIA_DRIVER_CAPABILITIES",
                                         "TZ"};

// After the head of a stream is full, the last this many bytes are kept too: a traceback is at
// the end of the output.
constexpr size_t kTailBytes = 16 * 1024;

// What the init writes to the status pipe, before the command's wait status, when the pooled
// network namespace was not clean (wait statuses fit in 16 bits).
constexpr int kNetnsNotCleanMessage = 0x10000;

// Paths the child may not write to even as its own uid: world-writable places outside scratch.
constexpr const char* kReadOnlyInChild[] = {"/tmp", "/var/tmp", "/dev/shm"};

class CappedCapture {
 public:
  explicit CappedCapture(size_t cap) : cap_(cap) {}
  void append(const char* data, size_t n) {
    size_t take = std::min(n, cap_ - std::min(cap_, head_.size()));
    head_.append(data, take);
    if (take == n) return;
    tail_.append(data + take, n - take);
    if (tail_.size() > 2 * kTailBytes) {
      size_t cut = tail_.size() - kTailBytes;
      dropped_ += cut;
      tail_.erase(0, cut);
    }
  }
  bool truncated() const { return dropped_ > 0; }
  std::string text() const {
    if (dropped_ == 0) return head_ + tail_;
    return head_ + "\n[... " + std::to_string(dropped_) + " bytes dropped ...]\n" + tail_;
  }

 private:
  size_t cap_;
  std::string head_;
  std::string tail_;
  std::uint64_t dropped_ = 0;
};

// True when every directory above `path` lets others through and the file lets others execute:
// what an unprivileged child needs to exec it.
bool others_can_exec(const std::string& path) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0 || !(st.st_mode & S_IXOTH)) return false;
  for (fs::path dir = fs::path(path).parent_path(); !dir.empty() && dir != dir.root_path();
       dir = dir.parent_path()) {
    if (stat(dir.c_str(), &st) != 0 || !(st.st_mode & S_IXOTH)) return false;
  }
  return true;
}

std::string resolve_in_path(const std::string& name, const std::string& path_var,
                            bool unprivileged) {
  if (name.find('/') != std::string::npos) return name;
  size_t start = 0;
  while (start <= path_var.size()) {
    size_t end = path_var.find(':', start);
    if (end == std::string::npos) end = path_var.size();
    std::string dir = path_var.substr(start, end - start);
    if (!dir.empty()) {
      std::string candidate = dir + "/" + name;
      if (access(candidate.c_str(), X_OK) == 0 && (!unprivileged || others_can_exec(candidate))) {
        return candidate;
      }
    }
    start = end + 1;
  }
  return name;
}

std::vector<std::string> child_environment(const SandboxSpec& spec, const std::string& scratch) {
  std::vector<std::string> env;
  for (const char* name : kEnvAllowList) {
    if (const char* value = getenv(name)) env.push_back(std::string(name) + "=" + value);
  }
  env.push_back("HOME=" + scratch);
  env.push_back("TMPDIR=" + scratch);
  // A run's uid has no passwd entry; getpass.getuser() (used by torch.profiler, among others)
  // reads these first instead of failing with "getpwuid(): uid not found".
  env.push_back(std::string("USER=") + kSandboxUserName);
  env.push_back(std::string("LOGNAME=") + kSandboxUserName);
  env.push_back("PYTHONDONTWRITEBYTECODE=1");
  env.push_back("PYTHONNOUSERSITE=1");
  for (const auto& e : spec.env) env.push_back(e);
  return env;
}

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

// The uid/gid a run switches to (-1: none), resolved from SandboxSpec::uid/gid.
struct RunIdentity {
  int uid = -1;
  int gid = -1;
};

// Runs in the child between clone and exec: only async-signal-safe calls, no allocation (the
// worker is multi-threaded; another thread may hold the allocator's lock). In the isolated case
// the child comes from a raw clone, so glibc still believes the worker's threads exist in it:
// glibc's fork() would take every malloc arena lock and setuid() would signal those threads, so
// both go through raw syscalls here (see raw_fork).
[[noreturn]] void child_main(const SandboxSpec& spec, RunIdentity who, const char* scratch,
                             const char* exe, char* const* argv, char* const* envp, int in_fd,
                             int out_fd, int err_fd, int status_fd, int netns_fd, bool isolated,
                             bool drop) {
  setpgid(0, 0);
  dup2(in_fd, 0);
  dup2(out_fd, 1);
  dup2(err_fd, 2);
  if (isolated) {
    if (netns_fd >= 0) {
      if (setns(netns_fd, CLONE_NEWNET) != 0) {
        write_str(2, "sandbox: cannot join the pooled network namespace\n");
        _exit(126);
      }
      // Checked here, in each run's own child, so checks run in parallel. Not as created? This
      // run gets a fresh namespace, and the parent discards the pooled one.
      if (!netns_is_pristine()) {
        if (unshare(CLONE_NEWNET) != 0) {
          write_str(2, "sandbox: cannot replace an unclean network namespace\n");
          _exit(126);
        }
        const int message = kNetnsNotCleanMessage;
        ssize_t ignored = write(status_fd, &message, sizeof(message));
        (void)ignored;
      }
    }
    // Private mount propagation first, so nothing below leaks into the worker's namespace.
    if (mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) == 0) {
      for (const char* path : kReadOnlyInChild) {
        if (mount(path, path, nullptr, MS_BIND | MS_REC, nullptr) == 0) {
          mount(nullptr, path, nullptr, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID, nullptr);
        }
      }
      // The scratch folder may lie under one of them: bind it back, then clear the read-only
      // flag the bind copied.
      if (mount(scratch, scratch, nullptr, MS_BIND, nullptr) == 0) {
        mount(nullptr, scratch, nullptr, MS_REMOUNT | MS_BIND | MS_NOSUID, nullptr);
      }
      // A /proc of this PID namespace. Without it /proc/<getpid()> names a process of the
      // worker's namespace (pid 2 here is the host's kthreadd), and libraries that read their
      // own /proc entry by pid break: the CUDA driver failed with error 304 ("OS call failed")
      // in every sandboxed evaluation on the H200 node. It also hides the host's processes.
      if (mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr) != 0) {
        write_str(2, "sandbox: cannot mount /proc for the PID namespace\n");
        _exit(126);
      }
    }
    // This process is PID 1 of the new namespace, and PID 1 ignores signals it has no handler
    // for (a candidate's own abort() or kill(getpid(), SIGSEGV) would not end it). So it stays
    // a minimal init: the command runs in a child, and its wait status goes to the parent
    // through status_fd. When this init exits, the kernel kills everything left in the
    // namespace.
    // Clone copied every descriptor the worker had open, among them the pipes of concurrent
    // runs: held here for this run's whole life, they kept those runs' readers from seeing EOF
    // (each waited up to its drain deadline). Keep only 0-2 (this run's own pipes, so EOF
    // comes when the init has exited) and the status pipe.
    syscall(SYS_close_range, 3U, static_cast<unsigned>(status_fd - 1), 0U);
    syscall(SYS_close_range, static_cast<unsigned>(status_fd + 1), ~0U, 0U);
    pid_t command = raw_fork();
    if (command < 0) {
      write_str(2, "sandbox: fork of the command failed\n");
      _exit(126);
    }
    if (command > 0) {
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
  }
  if (spec.memory_limit_mb > 0) {
    set_limit(spec.limit_data_not_address_space ? RLIMIT_DATA : RLIMIT_AS,
              rlim_t(spec.memory_limit_mb) << 20);
  }
  if (spec.cpu_time_seconds > 0) set_limit(RLIMIT_CPU, rlim_t(spec.cpu_time_seconds));
  set_limit(RLIMIT_FSIZE, rlim_t(spec.max_output_mb) << 20);
  set_limit(RLIMIT_NOFILE, rlim_t(spec.max_open_files));
  set_limit(RLIMIT_NPROC, rlim_t(spec.max_processes));
  set_limit(RLIMIT_CORE, 0);
  if (chdir(scratch) != 0) {
    write_str(2, "sandbox: cannot enter the scratch directory\n");
    _exit(126);
  }
  syscall(SYS_close_range, 3U, ~0U, 0U);
  if (drop) {
    // Raw: they change this (single-threaded) process only, with no glibc bookkeeping.
    if (syscall(SYS_setgroups, 0, nullptr) != 0 || syscall(SYS_setgid, who.gid) != 0 ||
        syscall(SYS_setuid, who.uid) != 0) {
      write_str(2, "sandbox: cannot switch to the unprivileged uid\n");
      _exit(126);
    }
  }
  execve(exe, argv, envp);
  write_str(2, "sandbox: exec failed: ");
  write_str(2, strerrordesc_np(errno));  // strerror() may translate, which locks
  write_str(2, "\n");
  _exit(127);
}

}  // namespace

namespace {

std::mutex uid_mutex;
std::condition_variable uid_freed;
std::vector<bool> uid_in_use(kSandboxUidCount, false);
int uid_next = 0;

}  // namespace

SandboxUid::SandboxUid() {
  std::unique_lock<std::mutex> lock(uid_mutex);
  uid_freed.wait(lock, [] {
    return std::find(uid_in_use.begin(), uid_in_use.end(), false) != uid_in_use.end();
  });
  // Round robin, so a uid is reused as late as possible.
  while (uid_in_use[static_cast<size_t>(uid_next)]) uid_next = (uid_next + 1) % kSandboxUidCount;
  uid_in_use[static_cast<size_t>(uid_next)] = true;
  uid_ = kSandboxUidBase + uid_next;
  uid_next = (uid_next + 1) % kSandboxUidCount;
}

SandboxUid::~SandboxUid() {
  std::lock_guard<std::mutex> lock(uid_mutex);
  uid_in_use[static_cast<size_t>(uid_ - kSandboxUidBase)] = false;
  uid_freed.notify_one();
}

SandboxSpec parser_sandbox(SandboxSpec spec) {
  spec.isolate = false;
  return spec;
}

Result<SandboxResult> run_sandboxed(const SandboxSpec& spec) {
  DICE_ASSIGN_OR_RETURN(auto process, SandboxProcess::start(spec));
  return process->wait(spec.timeout_seconds);
}

Result<std::unique_ptr<SandboxProcess>> SandboxProcess::start(const SandboxSpec& spec) {
  if (spec.argv.empty()) return Status::invalid_argument("sandbox: empty command");
  std::unique_ptr<SandboxProcess> p(new SandboxProcess());
  p->spec_ = spec;
  p->netns_ = std::make_unique<NetnsLease>();
  const bool root = geteuid() == 0;
  RunIdentity who;
  if (spec.uid != kUniqueSandboxUid) {
    who = {spec.uid, spec.gid};
  } else if (root) {
    p->uid_lease_ = std::make_unique<SandboxUid>();
    who = {p->uid_lease_->uid(), p->uid_lease_->uid()};
  }  // else no switch: the worker's own uid
  const bool drop = root && who.uid >= 0;
  p->uid_ = who.uid;
  p->gid_ = who.gid;

  // Scratch directory; the destructor removes the one made here, even when start fails.
  p->scratch_ = spec.workdir;
  if (p->scratch_.empty()) {
    std::string templ = spec.scratch_root + "/dice-sandbox-XXXXXX";
    std::vector<char> buf(templ.begin(), templ.end());
    buf.push_back('\0');
    if (mkdtemp(buf.data()) == nullptr) {
      return Status::io_error("sandbox: cannot create a scratch directory under " +
                              spec.scratch_root + ": " + strerror(errno));
    }
    p->scratch_ = buf.data();
    p->own_scratch_ = true;
  }
  DICE_RETURN_IF_ERROR(p->add_files(spec.files));
  if (drop && p->own_scratch_ && chown(p->scratch_.c_str(), who.uid, who.gid) != 0) {
    return Status::io_error("sandbox: cannot hand " + p->scratch_ + " to uid " +
                            std::to_string(who.uid) + ": " + strerror(errno));
  }

  // Everything the child needs, allocated before clone.
  std::vector<std::string> env = child_environment(spec, p->scratch_);
  std::string path_var = "/usr/local/bin:/usr/bin:/bin";
  for (const auto& e : env) {
    if (e.rfind("PATH=", 0) == 0) path_var = e.substr(5);
  }
  const std::string exe = resolve_in_path(spec.argv[0], path_var, drop);
  std::vector<char*> argv;
  for (const auto& a : spec.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  std::vector<char*> envp;
  for (const auto& e : env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);

  // The parent's ends go into members at once, so the destructor closes them on every path.
  int out_pipe[2], err_pipe[2], status_pipe[2], input[2] = {-1, -1};
  if (pipe2(out_pipe, O_CLOEXEC) != 0) return Status::io_error("sandbox: pipe failed");
  p->out_fd_ = out_pipe[0];
  if (pipe2(err_pipe, O_CLOEXEC) != 0) {
    close(out_pipe[1]);
    return Status::io_error("sandbox: pipe failed");
  }
  p->err_fd_ = err_pipe[0];
  // Non-blocking: an init killed on timeout writes nothing, and the read after reaping it must
  // not wait for anything else that might hold the write end.
  if (pipe2(status_pipe, O_CLOEXEC | O_NONBLOCK) != 0) {
    close(out_pipe[1]);
    close(err_pipe[1]);
    return Status::io_error("sandbox: pipe failed");
  }
  p->status_fd_ = status_pipe[0];
  // A socket, not a pipe, so that writing to a child that is gone fails with EPIPE instead of
  // raising SIGPIPE in the worker (send(MSG_NOSIGNAL)).
  if (spec.input_pipe) {
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, input) != 0) {
      for (int fd : {out_pipe[1], err_pipe[1], status_pipe[1]}) close(fd);
      return Status::io_error("sandbox: socketpair failed");
    }
    p->input_fd_ = input[0];
  } else {
    input[1] = open("/dev/null", O_RDONLY | O_CLOEXEC);
  }
  auto close_child_ends = [&] {
    for (int fd : {out_pipe[1], err_pipe[1], status_pipe[1], input[1]}) {
      if (fd >= 0) close(fd);
    }
  };

  SandboxResult& result = p->result_;
  pid_t pid = -1;
  // Returned to the pool when the process is destroyed: after the run's init was reaped, so
  // nothing of the run is left in the namespace.
  NetnsLease& netns = *p->netns_;
  if (spec.isolate) {
    bool own_netns = !spec.allow_network;
    if (own_netns && root && !spec.fresh_network_namespace) {
      auto lease = NetnsPool::shared().acquire();
      if (lease.ok()) {
        netns = std::move(lease).value();
        if (!drop) netns.discard_after_use();  // root could configure it: never reuse
        own_netns = false;
      } else {
        static std::atomic<bool> warned{false};
        if (!warned.exchange(true)) {
          DICE_LOG(Warn) << "sandbox: no pooled network namespace; runs create their own"
                         << kv("status", lease.status().to_string());
        }
      }
    }
    // Like fork() (no new stack), plus new namespaces.
    const long flags = CLONE_NEWPID | CLONE_NEWNS | (own_netns ? CLONE_NEWNET : 0) | SIGCHLD;
    pid = static_cast<pid_t>(syscall(SYS_clone, flags, nullptr, nullptr, nullptr, nullptr));
    if (pid < 0 && (errno == EPERM || errno == EINVAL || errno == ENOSPC)) {
      static std::atomic<bool> warned{false};
      if (!warned.exchange(true)) {
        DICE_LOG(Warn) << "sandbox: namespaces not permitted; candidates run without network, "
                          "PID and mount isolation"
                       << kv("errno", strerror(errno));
      }
    } else {
      result.isolated = pid >= 0;
      result.pooled_network = result.isolated && netns.fd() >= 0;
    }
  }
  if (pid < 0 && !result.isolated) pid = fork();
  if (pid < 0) {
    int err = errno;
    close_child_ends();
    return Status::io_error(std::string("sandbox: cannot start a child: ") + strerror(err));
  }
  if (pid == 0) {
    child_main(spec, who, p->scratch_.c_str(), exe.c_str(), argv.data(), envp.data(), input[1],
               out_pipe[1], err_pipe[1], status_pipe[1], netns.fd(), result.isolated, drop);
  }
  p->pid_ = pid;
  result.unprivileged = drop || !root;
  close_child_ends();
  // Readable when the child exits, so loops wake then instead of polling for it; -1 before
  // Linux 5.3, where they look every 5 ms.
  p->pidfd_ = static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
  return p;
}

SandboxProcess::~SandboxProcess() {
  if (pid_ > 0 && !reaped_) kill_and_reap();
  for (int fd : {pidfd_, out_fd_, err_fd_, status_fd_, input_fd_}) {
    if (fd >= 0) close(fd);
  }
  if (own_scratch_) {
    std::error_code ec;
    fs::remove_all(scratch_, ec);
  }
}

void SandboxProcess::kill_and_reap() {
  kill(pid_, SIGKILL);  // PID 1 of its namespace: the kernel kills the rest
  kill(-pid_, SIGKILL);
  waitpid(pid_, &wait_status_, 0);
  reaped_ = true;
}

Status SandboxProcess::add_files(const std::vector<std::pair<std::string, std::string>>& files) {
  const bool chown_to_run = geteuid() == 0 && uid_ >= 0 && own_scratch_;
  for (const auto& [name, contents] : files) {
    if (name.empty() || name.find('/') != std::string::npos || name == "." || name == "..") {
      return Status::invalid_argument("sandbox: a scratch file needs a plain name, not \"" + name +
                                      "\"");
    }
    const std::string path = scratch_ + "/" + name;
    {
      std::ofstream out(path, std::ios::binary);
      out << contents;
      if (!out) return Status::io_error("sandbox: cannot write " + path);
    }
    if (chown_to_run && lchown(path.c_str(), uid_, gid_) != 0) {
      return Status::io_error("sandbox: cannot hand " + path + " to uid " + std::to_string(uid_) +
                              ": " + strerror(errno));
    }
  }
  return Status::ok_status();
}

Status SandboxProcess::wait_for_line(const std::string& line, double timeout_seconds) {
  // More than this before the line: not the process we expect; stop reading.
  constexpr size_t kMaxEarlyOutput = 1 << 20;
  const std::string marker = line + "\n";
  const Clock::time_point deadline =
      Clock::now() +
      std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(timeout_seconds));
  char buf[4096];
  for (;;) {
    for (size_t at = early_stdout_.find(marker); at != std::string::npos;
         at = early_stdout_.find(marker, at + 1)) {
      if (at == 0 || early_stdout_[at - 1] == '\n') {
        early_stdout_.erase(at, marker.size());
        return Status::ok_status();
      }
    }
    if (reaped_ || out_fd_ < 0) {
      return Status::aborted("sandbox: the process ended before printing \"" + line + "\"");
    }
    if (early_stdout_.size() > kMaxEarlyOutput) {
      return Status::aborted("sandbox: over 1 MiB of output before \"" + line + "\"");
    }
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) {
      return Status::timeout("sandbox: no \"" + line + "\" within " +
                             std::to_string(timeout_seconds) + " s");
    }
    pollfd fds[2] = {{out_fd_, POLLIN, 0}, {pidfd_, POLLIN, 0}};
    const int ms = static_cast<int>(std::min<long long>(left.count(), pidfd_ >= 0 ? 1000 : 5));
    if (poll(fds, 2, ms) < 0 && errno != EINTR) {
      return Status::io_error(std::string("sandbox: poll failed: ") + strerror(errno));
    }
    if (fds[0].revents & (POLLIN | POLLHUP | POLLERR)) {
      ssize_t n = read(out_fd_, buf, sizeof(buf));
      if (n > 0) {
        early_stdout_.append(buf, static_cast<size_t>(n));
        continue;
      }
      if (n == 0) {
        return Status::aborted("sandbox: the process closed its output before printing \"" + line +
                               "\"");
      }
    }
    // Exited (pidfd readable, or looked up without one) with nothing more to read.
    siginfo_t info{};
    if ((fds[1].revents & POLLIN) ||
        (pidfd_ < 0 &&
         waitid(P_PID, static_cast<id_t>(pid_), &info, WEXITED | WNOHANG | WNOWAIT) == 0 &&
         info.si_pid == pid_)) {
      if (!(fds[0].revents & POLLIN)) {
        return Status::aborted("sandbox: the process ended before printing \"" + line + "\"");
      }
    }
  }
}

Status SandboxProcess::send_input(const std::string& text, bool keep_open) {
  if (input_fd_ < 0) return Status::invalid_argument("sandbox: the process has no input pipe");
  size_t sent = 0;
  while (sent < text.size()) {
    ssize_t n = send(input_fd_, text.data() + sent, text.size() - sent, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      return Status::aborted(std::string("sandbox: cannot write to the process: ") +
                             strerror(errno));
    }
    sent += static_cast<size_t>(n);
  }
  if (keep_open) return Status::ok_status();
  close(input_fd_);
  input_fd_ = -1;
  return Status::ok_status();
}

SandboxResult SandboxProcess::wait(double timeout_seconds) {
  SandboxResult result = result_;
  if (input_fd_ >= 0) {  // nothing more to send: the child reads end of input
    close(input_fd_);
    input_fd_ = -1;
  }
  const Clock::time_point start = Clock::now();
  const size_t cap = static_cast<size_t>(spec_.max_output_mb) << 20;
  CappedCapture out(cap), err(cap);
  out.append(early_stdout_.data(), early_stdout_.size());
  early_stdout_.clear();
  const Clock::time_point deadline = start + std::chrono::duration_cast<Clock::duration>(
                                                 std::chrono::duration<double>(timeout_seconds));
  Clock::time_point drain_deadline = Clock::time_point::max();
  int& status = wait_status_;
  const pid_t pid = pid_;
  pollfd fds[3] = {{out_fd_, POLLIN, 0}, {err_fd_, POLLIN, 0}, {reaped_ ? -1 : pidfd_, POLLIN, 0}};
  CappedCapture* sinks[2] = {&out, &err};
  int open_fds = 2;
  char buf[65536];
  while (open_fds > 0 || !reaped_) {
    const Clock::time_point now = Clock::now();
    if (!result.timed_out && !reaped_ && now >= deadline) {
      result.timed_out = true;
      kill(pid, SIGKILL);  // PID 1 of its namespace: the kernel kills the rest
      kill(-pid, SIGKILL);
    }
    if (reaped_ && now >= drain_deadline) break;  // leftovers hold the pipes: stop reading
    if (!reaped_) {
      // Peek first (WNOWAIT): while the child is a zombie its pid, hence its process group's
      // id, cannot be handed to another process, so the group kill cannot hit a stranger.
      siginfo_t info{};
      if (waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT) == 0 &&
          info.si_pid == pid) {
        kill(-pid, SIGKILL);  // without a PID namespace, descendants may remain in the group
        waitpid(pid, &status, 0);
        reaped_ = true;
        fds[2].fd = -1;
        drain_deadline = Clock::now() + std::chrono::seconds(1);
      }
    }
    if (open_fds == 0) {
      if (!reaped_) poll(&fds[2], 1, pidfd_ >= 0 ? 20 : 5);
      continue;
    }
    int ready = poll(fds, 3, 20);
    if (ready <= 0) continue;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      ssize_t n = read(fds[i].fd, buf, sizeof(buf));
      if (n > 0) {
        sinks[i]->append(buf, static_cast<size_t>(n));
      } else if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
        close(fds[i].fd);
        fds[i].fd = -1;
        --open_fds;
      }
    }
  }
  out_fd_ = fds[0].fd;  // still open when the drain deadline passed: the destructor closes it
  err_fd_ = fds[1].fd;
  result.wall_seconds = seconds_since(start);
  if (result.isolated) {
    // The init relays the command's status; without it (killed on timeout) keep init's own.
    int messages[2] = {0, 0};
    const ssize_t got = read(status_fd_, messages, sizeof(messages));
    for (ssize_t i = 0; i < got / static_cast<ssize_t>(sizeof(int)); ++i) {
      if (messages[i] == kNetnsNotCleanMessage) {
        netns_->discard_after_use();
        result.pooled_network = false;
        static std::atomic<bool> warned{false};
        if (!warned.exchange(true)) {
          DICE_LOG(Warn) << "sandbox: a pooled network namespace was not clean; discarded (a "
                            "kernel whose /proc/net/sockstat counts host-wide says so every run)";
        }
      } else {
        status = messages[i];
      }
    }
  }
  if (WIFEXITED(status)) result.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) result.signal = WTERMSIG(status);
  result.stdout_text = out.text();
  result.stderr_text = err.text();
  result.output_truncated = out.truncated() || err.truncated();
  return result;
}

namespace {

bool contains(const std::string& text, const char* needle) {
  return text.find(needle) != std::string::npos;
}

}  // namespace

schema::FailureClass classify_sandbox_failure(const SandboxResult& r) {
  using FC = schema::FailureClass;
  if (r.timed_out) return FC::TIMEOUT;
  const std::string& e = r.stderr_text;
  // The sandbox's own setup failed (see child_main): not the candidate's doing.
  if ((r.exit_code == 126 || r.exit_code == 127) && e.rfind("sandbox: ", 0) == 0) {
    return FC::INTERNAL_ERROR;
  }
  if (r.signal == SIGXCPU || r.signal == SIGXFSZ) return FC::RESOURCE_LIMIT;
  // Killed without our timeout: the OOM killer or the hard CPU limit.
  if (r.signal == SIGKILL) return FC::RESOURCE_LIMIT;
  if (contains(e, "MemoryError") || contains(e, "std::bad_alloc") ||
      contains(e, "Cannot allocate memory") || contains(e, "Resource temporarily unavailable") ||
      contains(e, "File too large") || contains(e, "Too many open files")) {
    return FC::RESOURCE_LIMIT;
  }
  if (contains(e, "Network is unreachable") || contains(e, "Cannot assign requested address") ||
      contains(e, "Temporary failure in name resolution") || contains(e, "Read-only file system") ||
      contains(e, "Permission denied") || contains(e, "Operation not permitted")) {
    return FC::SANDBOX_VIOLATION;
  }
  if (r.signal != 0) return FC::CRASHED;
  return FC::NONE;
}

std::string describe_sandbox_result(const SandboxResult& r) {
  if (r.timed_out) return "timed out after " + std::to_string(r.wall_seconds) + " s";
  if (r.signal != 0) {
    const char* name = sigabbrev_np(r.signal);
    return "killed by signal " + std::to_string(r.signal) + " (SIG" + (name ? name : "?") + ")";
  }
  return "exit code " + std::to_string(r.exit_code);
}

}  // namespace dice

namespace dice {

Result<std::vector<std::pair<std::string, std::string>>> read_files_for_sandbox(
    const std::string& dir, const std::vector<std::string>& names) {
  std::vector<std::pair<std::string, std::string>> files;
  for (const auto& name : names) {
    const std::string path = dir.empty() ? name : dir + "/" + name;
    std::ifstream in(path, std::ios::binary);
    if (!in) return Status::not_found("cannot read " + path);
    std::string contents((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    files.emplace_back(fs::path(name).filename().string(), std::move(contents));
  }
  return files;
}

}  // namespace dice
