#include "reward/sandbox/sandbox.h"

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
#include <functional>
#include <mutex>
#include <optional>
#include <vector>

#include "common/log.h"
#include "common/read_file.h"
#include "common/remove_tree.h"
#include "common/seconds_since.h"
#include "reward/sandbox/sandbox_cgroup.h"
#include "reward/sandbox/sandbox_child.h"
#include "reward/sandbox/sandbox_env.h"
#include "reward/sandbox/sandbox_netns.h"
#include "reward/sandbox/sandbox_root.h"
#include "reward/sandbox/sandbox_seccomp.h"

namespace dice {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

// After the head of a stream is full, the last this many bytes are kept too: a traceback is at
// the end of the output.
constexpr size_t kTailBytes = 16 * 1024;

// Appends to `text`, which keeps at most its last 2 * kTailBytes (cut to kTailBytes when over).
void append_keeping_tail(std::string* text, const char* data, size_t n) {
  text->append(data, n);
  if (text->size() > 2 * kTailBytes) text->erase(0, text->size() - kTailBytes);
}

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

namespace {

// The child's command line and environment, allocated before clone (after it, only system
// calls). argv points into the spec's strings, envp into `env`.
struct ChildCommand {
  std::vector<std::string> env;
  std::string exe;
  std::vector<char*> argv;
  std::vector<char*> envp;
};

void prepare_child_command(const SandboxSpec& spec, const std::string& scratch, bool drop,
                           ChildCommand* command) {
  command->env = child_environment(spec, scratch);
  std::string path_var = "/usr/local/bin:/usr/bin:/bin";
  for (const auto& e : command->env) {
    if (e.rfind("PATH=", 0) == 0) path_var = e.substr(5);
  }
  command->exe = resolve_in_path(spec.argv[0], path_var, drop);
  for (const auto& a : spec.argv) command->argv.push_back(const_cast<char*>(a.c_str()));
  command->argv.push_back(nullptr);
  for (const auto& e : command->env) command->envp.push_back(const_cast<char*>(e.c_str()));
  command->envp.push_back(nullptr);
}

}  // namespace

// The child's ends of its stdin, stdout, stderr and status pipe, open until it has started.
struct SandboxProcess::ChildEnds {
  int out = -1, err = -1, status = -1, in = -1;
  void close_all() const {
    for (int fd : {out, err, status, in}) {
      if (fd >= 0) close(fd);
    }
  }
};

Result<std::unique_ptr<SandboxProcess>> SandboxProcess::start(const SandboxSpec& spec) {
  if (spec.argv.empty()) return Status::invalid_argument("sandbox: empty command");
  std::unique_ptr<SandboxProcess> p(new SandboxProcess());
  p->spec_ = spec;
  p->netns_ = std::make_unique<NetnsLease>();
  const bool root = geteuid() == 0;
  p->choose_identity(spec, root);
  const bool drop = root && p->uid_ >= 0;
  DICE_RETURN_IF_ERROR(p->prepare_scratch(spec, drop));

  // Everything the child needs, allocated before clone.
  ChildCommand command;
  prepare_child_command(spec, p->scratch_, drop, &command);
  ChildEnds ends;
  DICE_RETURN_IF_ERROR(p->open_pipes(spec.input_pipe, &ends));

  SandboxResult& result = p->result_;
  // A layer that cannot be had: the command is not started, and the result says why.
  auto unavailable = [&](const std::string& reason) {
    ends.close_all();
    p->mark_unavailable(reason);
    return std::move(p);
  };
  ChildPlan plan;
  plan.spec = &p->spec_;
  plan.uid = p->uid_;
  plan.gid = p->gid_;
  plan.drop = drop;
  plan.scratch = p->scratch_.c_str();
  plan.exe = command.exe.c_str();
  plan.argv = command.argv.data();
  plan.envp = command.envp.data();
  plan.in_fd = ends.in;
  plan.out_fd = ends.out;
  plan.err_fd = ends.err;
  plan.status_fd = ends.status;
  plan.parent_pid = getpid();
  pid_t pid = -1;
  if (spec.isolate) {
    if (!root) {
      return unavailable("namespaces: the worker runs as uid " + std::to_string(geteuid()) +
                         ", not root: user, PID, mount, IPC, UTS and network namespaces, the "
                         "private root and the uid switch need root");
    }
    bool own_netns = false;
    if (auto why = p->prepare_isolation(spec, command.exe, command.env, drop, &own_netns)) {
      return unavailable(*why);
    }
    p->plan_isolated(own_netns, &plan);
    // How the init, in its own PID namespace, tells that the worker still lives (sandbox_child.h).
    plan.parent_pidfd = static_cast<int>(syscall(SYS_pidfd_open, getpid(), 0));
    pid = start_child(plan);
    const int clone_error = errno;
    if (plan.parent_pidfd >= 0) close(plan.parent_pidfd);
    errno = clone_error;
    if (pid < 0) {
      return unavailable(std::string("namespaces: clone(CLONE_NEWPID | CLONE_NEWNS | "
                                     "CLONE_NEWIPC | CLONE_NEWUTS") +
                         (own_netns ? " | CLONE_NEWNET" : "") + ") failed: " + strerror(errno));
    }
    result.isolated = true;
    result.private_root = true;
    result.seccomp = true;
    result.cgroup = p->cgroup_ != nullptr;
    result.pooled_network = p->netns_->fd() >= 0;
  } else {
    pid = start_child(plan);
  }
  if (pid < 0) {
    int err = errno;
    ends.close_all();
    return Status::io_error(std::string("sandbox: cannot start a child: ") + strerror(err));
  }
  p->pid_ = pid;
  result.unprivileged = drop || !root;
  ends.close_all();
  // Readable when the child exits, so loops wake then instead of polling for it; -1 before
  // Linux 5.3, where they look every 5 ms.
  p->pidfd_ = static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
  return p;
}

// The uid/gid a run switches to (-1: none), resolved from SandboxSpec::uid/gid.
void SandboxProcess::choose_identity(const SandboxSpec& spec, bool root) {
  if (spec.uid != kUniqueSandboxUid) {
    uid_ = spec.uid;
    gid_ = spec.gid;
  } else if (root) {
    uid_lease_ = std::make_unique<SandboxUid>();
    uid_ = gid_ = uid_lease_->uid();
  }  // else no switch: the worker's own uid
}

Status SandboxProcess::prepare_scratch(const SandboxSpec& spec, bool drop) {
  // Scratch directory; the destructor removes the one made here, even when start fails.
  // Absolute: the run's root binds it at this same path.
  std::error_code absolute_error;
  scratch_ = spec.workdir.empty() ? "" : fs::absolute(spec.workdir, absolute_error).string();
  if (scratch_.empty()) {
    std::string templ =
        fs::absolute(spec.scratch_root, absolute_error).string() + "/dice-sandbox-XXXXXX";
    std::vector<char> buf(templ.begin(), templ.end());
    buf.push_back('\0');
    if (mkdtemp(buf.data()) == nullptr) {
      return Status::io_error("sandbox: cannot create a scratch directory under " +
                              spec.scratch_root + ": " + strerror(errno));
    }
    scratch_ = buf.data();
    own_scratch_ = true;
  }
  DICE_RETURN_IF_ERROR(add_files(spec.files));
  if (drop && own_scratch_ && chown(scratch_.c_str(), uid_, gid_) != 0) {
    return Status::io_error("sandbox: cannot hand " + scratch_ + " to uid " + std::to_string(uid_) +
                            ": " + strerror(errno));
  }
  return Status::ok_status();
}

Status SandboxProcess::open_pipes(bool input_pipe, ChildEnds* ends) {
  // The parent's ends go into members at once, so the destructor closes them on every path.
  int out_pipe[2], err_pipe[2], status_pipe[2], input[2] = {-1, -1};
  if (pipe2(out_pipe, O_CLOEXEC) != 0) return Status::io_error("sandbox: pipe failed");
  out_fd_ = out_pipe[0];
  if (pipe2(err_pipe, O_CLOEXEC) != 0) {
    close(out_pipe[1]);
    return Status::io_error("sandbox: pipe failed");
  }
  err_fd_ = err_pipe[0];
  // Non-blocking: an init killed on timeout writes nothing, and the read after reaping it must
  // not wait for anything else that might hold the write end.
  if (pipe2(status_pipe, O_CLOEXEC | O_NONBLOCK) != 0) {
    close(out_pipe[1]);
    close(err_pipe[1]);
    return Status::io_error("sandbox: pipe failed");
  }
  status_fd_ = status_pipe[0];
  // A socket, not a pipe, so that writing to a child that is gone fails with EPIPE instead of
  // raising SIGPIPE in the worker (send(MSG_NOSIGNAL)).
  if (input_pipe) {
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, input) != 0) {
      for (int fd : {out_pipe[1], err_pipe[1], status_pipe[1]}) close(fd);
      return Status::io_error("sandbox: socketpair failed");
    }
    input_fd_ = input[0];
  } else {
    input[1] = open("/dev/null", O_RDONLY | O_CLOEXEC);
  }
  ends->out = out_pipe[1];
  ends->err = err_pipe[1];
  ends->status = status_pipe[1];
  ends->in = input[1];
  return Status::ok_status();
}

void SandboxProcess::mark_unavailable(const std::string& reason) {
  result_.unavailable = true;
  result_.unavailable_reason = reason;
  reaped_ = true;  // nothing to wait for
  static std::atomic<bool> warned{false};
  if (!warned.exchange(true)) {
    DICE_LOG(Error) << "sandbox unavailable: commands are not run" << kv("why", reason);
  }
}

std::optional<std::string> SandboxProcess::prepare_isolation(const SandboxSpec& spec,
                                                             const std::string& exe,
                                                             const std::vector<std::string>& env,
                                                             bool drop, bool* own_netns) {
  auto planned = plan_root(spec, scratch_, exe, env, uid_, gid_);
  if (!planned.ok()) return planned.status().message();
  root_ = std::move(planned).value();
  if (spec.cgroups != SandboxCgroups::kOff) {
    auto cgroup = RunCgroup::create(spec.memory_limit_mb > 0 ? spec.memory_limit_mb << 20 : 0,
                                    spec.max_processes + 1);  // + the namespace's init
    if (cgroup.ok()) {
      cgroup_ = std::move(cgroup).value();
    } else if (spec.cgroups == SandboxCgroups::kRequired) {
      return cgroup.status().message() + " (reward.sandbox.cgroups: required)";
    } else {
      static std::atomic<bool> told{false};
      if (!told.exchange(true)) {
        DICE_LOG(Info) << "sandbox: no per-run cgroups on this host; rlimits only "
                          "(reward.sandbox.cgroups: auto)"
                       << kv("why", cgroup.status().message());
      }
    }
  }
  *own_netns = lease_network_namespace(spec, drop);
  const int map_uid = uid_ < 0 ? 0 : uid_;
  const int map_gid = gid_ < 0 ? 0 : gid_;
  uid_map_ = std::to_string(map_uid) + " " + std::to_string(map_uid) + " 1\n";
  gid_map_ = std::to_string(map_gid) + " " + std::to_string(map_gid) + " 1\n";
  return std::nullopt;
}

bool SandboxProcess::lease_network_namespace(const SandboxSpec& spec, bool drop) {
  // Returned to the pool when the process is destroyed: after the run's init was reaped, so
  // nothing of the run is left in the namespace.
  NetnsLease& netns = *netns_;
  bool own_netns = !spec.allow_network;
  if (own_netns) {
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
  return own_netns;
}

void SandboxProcess::plan_isolated(bool own_netns, ChildPlan* plan) {
  plan->isolated = true;
  plan->netns_fd = netns_->fd();
  plan->cgroup_procs_fd = cgroup_ ? cgroup_->procs_fd() : -1;
  plan->root = root_.get();
  plan->seccomp = &sandbox_seccomp_program();
  plan->uid_map = uid_map_.c_str();
  plan->gid_map = gid_map_.c_str();
  // Like fork() (no new stack), plus new namespaces; the user namespace comes later, in the
  // command (sandbox_child.h): joining the pooled network namespace needs the worker's.
  plan->clone_flags = CLONE_NEWPID | CLONE_NEWNS | CLONE_NEWIPC | CLONE_NEWUTS |
                      (own_netns ? CLONE_NEWNET : 0) | SIGCHLD;
}

SandboxProcess::~SandboxProcess() {
  if (pid_ > 0 && !reaped_) kill_and_reap();
  for (int fd : {pidfd_, out_fd_, err_fd_, status_fd_, input_fd_}) {
    if (fd >= 0) close(fd);
  }
  if (own_scratch_) {
    remove_tree(scratch_).ignore();
  }
}

void SandboxProcess::kill_now() {
  // Through the pidfd, which stays open until destruction: never a reused pid, and no read of
  // state that wait() in another thread writes. PID 1 of its namespace: the rest die with it.
  if (pidfd_ >= 0) syscall(SYS_pidfd_send_signal, pidfd_, SIGKILL, nullptr, 0);
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

Status SandboxProcess::read_stdout_until(const std::function<bool()>& found,
                                         const std::string& what, double timeout_seconds) {
  // More than this unconsumed before what is awaited: not the process we expect; stop reading.
  constexpr size_t kMaxEarlyOutput = 1 << 20;
  const Clock::time_point deadline =
      Clock::now() +
      std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(timeout_seconds));
  char buf[4096];
  for (;;) {
    if (found()) return Status::ok_status();
    if (reaped_ || out_fd_ < 0) {
      return Status::aborted("sandbox: the process ended before printing " + what);
    }
    if (early_stdout_.size() > kMaxEarlyOutput) {
      return Status::aborted("sandbox: over 1 MiB of output before " + what);
    }
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) {
      return Status::timeout("sandbox: no " + what + " within " + std::to_string(timeout_seconds) +
                             " s");
    }
    // stderr is drained too: a process that writes more than a pipe holds there while it is
    // awaited here would otherwise block until the deadline.
    pollfd fds[3] = {{out_fd_, POLLIN, 0}, {pidfd_, POLLIN, 0}, {err_fd_, POLLIN, 0}};
    const int ms = static_cast<int>(std::min<long long>(left.count(), pidfd_ >= 0 ? 1000 : 5));
    if (poll(fds, 3, ms) < 0 && errno != EINTR) {
      return Status::io_error(std::string("sandbox: poll failed: ") + strerror(errno));
    }
    if (fds[2].revents & (POLLIN | POLLHUP | POLLERR)) {
      ssize_t n = read(err_fd_, buf, sizeof(buf));
      if (n > 0) {
        append_keeping_tail(&stderr_since_, buf, static_cast<size_t>(n));
      } else if (n == 0) {
        close(err_fd_);
        err_fd_ = -1;
      }
    }
    if (fds[0].revents & (POLLIN | POLLHUP | POLLERR)) {
      ssize_t n = read(out_fd_, buf, sizeof(buf));
      if (n > 0) {
        early_stdout_.append(buf, static_cast<size_t>(n));
        continue;
      }
      if (n == 0) {
        return Status::aborted("sandbox: the process closed its output before printing " + what);
      }
    }
    // Exited (pidfd readable, or looked up without one) with nothing more to read.
    siginfo_t info{};
    if ((fds[1].revents & POLLIN) ||
        (pidfd_ < 0 &&
         waitid(P_PID, static_cast<id_t>(pid_), &info, WEXITED | WNOHANG | WNOWAIT) == 0 &&
         info.si_pid == pid_)) {
      if (!(fds[0].revents & POLLIN)) {
        return Status::aborted("sandbox: the process ended before printing " + what);
      }
    }
  }
}

Status SandboxProcess::wait_for_line(const std::string& line, double timeout_seconds) {
  const std::string marker = line + "\n";
  return read_stdout_until(
      [&] {
        for (size_t at = early_stdout_.find(marker); at != std::string::npos;
             at = early_stdout_.find(marker, at + 1)) {
          if (at == 0 || early_stdout_[at - 1] == '\n') {
            early_stdout_.erase(at, marker.size());
            return true;
          }
        }
        return false;
      },
      "\"" + line + "\"", timeout_seconds);
}

Result<std::string> SandboxProcess::next_line_starting(const std::vector<std::string>& prefixes,
                                                       double timeout_seconds) {
  std::string line;
  auto take = [&] {
    for (size_t end = early_stdout_.find('\n'); end != std::string::npos;
         end = early_stdout_.find('\n')) {
      std::string next = early_stdout_.substr(0, end);
      early_stdout_.erase(0, end + 1);
      for (const auto& prefix : prefixes) {
        if (next.compare(0, prefix.size(), prefix) == 0) {
          line = std::move(next);
          return true;
        }
      }
    }
    return false;
  };
  std::string what = "a line starting";
  for (size_t i = 0; i < prefixes.size(); ++i) {
    what += (i == 0 ? " \"" : " or \"") + prefixes[i] + "\"";
  }
  DICE_RETURN_IF_ERROR(read_stdout_until(take, what, timeout_seconds));
  return line;
}

std::string SandboxProcess::take_stderr() {
  // What the process wrote before the line just read is in the pipe already (written in order):
  // read what is there without waiting, so a traceback printed before a result comes with it.
  char buf[4096];
  for (pollfd fd{err_fd_, POLLIN, 0}; err_fd_ >= 0 && poll(&fd, 1, 0) > 0;) {
    const ssize_t n = read(err_fd_, buf, sizeof(buf));
    if (n <= 0) break;
    append_keeping_tail(&stderr_since_, buf, static_cast<size_t>(n));
  }
  std::string text;
  text.swap(stderr_since_);
  return text;
}

Status SandboxProcess::send_input(const std::string& text, bool keep_open, int pass_fd) {
  if (input_fd_ < 0) return Status::invalid_argument("sandbox: the process has no input pipe");
  size_t sent = 0;
  if (pass_fd >= 0) {
    // The descriptor rides on the first byte (SCM_RIGHTS), so the child receives both in one
    // recvmsg before it reads the rest of its job.
    if (text.empty()) return Status::invalid_argument("sandbox: a passed descriptor needs text");
    char control[CMSG_SPACE(sizeof(int))] = {};
    iovec iov{const_cast<char*>(text.data()), 1};
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control;
    msg.msg_controllen = sizeof(control);
    cmsghdr* cmsg = CMSG_FIRSTHDR(&msg);
    cmsg->cmsg_level = SOL_SOCKET;
    cmsg->cmsg_type = SCM_RIGHTS;
    cmsg->cmsg_len = CMSG_LEN(sizeof(int));
    std::memcpy(CMSG_DATA(cmsg), &pass_fd, sizeof(int));
    ssize_t n;
    do {
      n = sendmsg(input_fd_, &msg, MSG_NOSIGNAL);
    } while (n < 0 && errno == EINTR);
    if (n < 0) {
      return Status::aborted(std::string("sandbox: cannot pass a descriptor to the process: ") +
                             strerror(errno));
    }
    sent = 1;
  }
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
  if (pid_ < 0) return result;  // never started: result_ says why (unavailable)
  if (input_fd_ >= 0) {         // nothing more to send: the child reads end of input
    close(input_fd_);
    input_fd_ = -1;
  }
  const Clock::time_point start = Clock::now();
  const size_t cap = static_cast<size_t>(spec_.max_output_mb) << 20;
  CappedCapture out(cap), err(cap);
  out.append(early_stdout_.data(), early_stdout_.size());
  early_stdout_.clear();
  err.append(stderr_since_.data(), stderr_since_.size());
  stderr_since_.clear();
  const Clock::time_point deadline = start + std::chrono::duration_cast<Clock::duration>(
                                                 std::chrono::duration<double>(timeout_seconds));
  Clock::time_point drain_deadline = Clock::time_point::max();
  int& status = wait_status_;
  const pid_t pid = pid_;
  pollfd fds[3] = {{out_fd_, POLLIN, 0}, {err_fd_, POLLIN, 0}, {reaped_ ? -1 : pidfd_, POLLIN, 0}};
  CappedCapture* sinks[2] = {&out, &err};
  int open_fds = (out_fd_ >= 0 ? 1 : 0) + (err_fd_ >= 0 ? 1 : 0);
  char buf[65536];
  while (open_fds > 0 || !reaped_) {
    const Clock::time_point now = Clock::now();
    if (!result.timed_out && !reaped_ && now >= deadline) {
      result.timed_out = true;
      kill(pid, SIGKILL);  // PID 1 of its namespace: the kernel kills the rest
      kill(-pid, SIGKILL);
    }
    if (reaped_ && now >= drain_deadline) break;  // leftovers hold the pipes: stop reading
    if (!reaped_ && reap_if_exited()) {
      fds[2].fd = -1;
      drain_deadline = Clock::now() + std::chrono::seconds(1);
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
  if (result.isolated) read_init_messages(&result);
  if (WIFEXITED(status)) result.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) result.signal = WTERMSIG(status);
  result.stdout_text = out.text();
  result.stderr_text = err.text();
  result.output_truncated = out.truncated() || err.truncated();
  return result;
}

bool SandboxProcess::reap_if_exited() {
  // Peek first (WNOWAIT): while the child is a zombie its pid, hence its process group's
  // id, cannot be handed to another process, so the group kill cannot hit a stranger.
  siginfo_t info{};
  if (waitid(P_PID, static_cast<id_t>(pid_), &info, WEXITED | WNOHANG | WNOWAIT) != 0 ||
      info.si_pid != pid_) {
    return false;
  }
  kill(-pid_, SIGKILL);  // without a PID namespace, descendants may remain in the group
  waitpid(pid_, &wait_status_, 0);
  reaped_ = true;
  return true;
}

void SandboxProcess::read_init_messages(SandboxResult* result) {
  // The init relays the command's status; without it (killed on timeout) keep init's own.
  // Before it, a replaced network namespace, or the setup step that failed (sandbox_child.h).
  int messages[16] = {};
  const ssize_t got = read(status_fd_, messages, sizeof(messages));
  const ssize_t count = got > 0 ? got / static_cast<ssize_t>(sizeof(int)) : 0;
  for (ssize_t i = 0; i < count; ++i) {
    if (messages[i] == kNetnsNotCleanMessage) {
      netns_->discard_after_use();
      result->pooled_network = false;
      static std::atomic<bool> warned{false};
      if (!warned.exchange(true)) {
        DICE_LOG(Warn) << "sandbox: a pooled network namespace was not clean; discarded (a "
                          "kernel whose /proc/net/sockstat counts host-wide says so every run)";
      }
    } else if (messages[i] == kSetupFailedMessage && i + 2 < count) {
      if (!result->unavailable) {
        result->unavailable = true;
        result->unavailable_reason =
            describe_setup_step(messages[i + 1], messages[i + 2], root_.get(), uid_);
      }
      i += 2;
    } else {
      wait_status_ = messages[i];
    }
  }
}

std::string describe_sandbox_result(const SandboxResult& r) {
  if (r.unavailable) return "sandbox-unavailable: " + r.unavailable_reason;
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
    Result<std::string> contents = read_file(path);
    if (!contents.ok())
      return Status::not_found("cannot read " + path + ": " + contents.status().message());
    files.emplace_back(fs::path(name).filename().string(), std::move(*contents));
  }
  return files;
}

}  // namespace dice
