#include "cluster/supervisor.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <deque>

#include "cluster/command.h"
#include "cluster/process.h"
#include "cluster/ssh_backend.h"
#include "common/exit_codes.h"
#include "common/log.h"

namespace dice::cluster {
namespace {

// ssh's own failures (connection refused, authentication, a lost link) exit 255.
constexpr int kSshFailed = 255;

// `remote`: the status is an ssh client's, whose remote start script exits 128 + N when the
// service was killed by signal N (cluster/remote_commands.h).
std::string describe_exit(int status, bool remote) {
  if (WIFEXITED(status)) {
    int code = WEXITSTATUS(status);
    if (remote && code == kSshFailed) return "exit 255 (ssh failed; see the service log)";
    if (remote && code > 128 && code < 128 + 65) {
      return "killed by signal " + std::to_string(code - 128);
    }
    return "exit " + std::to_string(code);
  }
  if (WIFSIGNALED(status)) return "killed by signal " + std::to_string(WTERMSIG(status));
  return "status " + std::to_string(status);
}

void write_all(int fd, const std::string& text) {
  std::size_t done = 0;
  while (done < text.size()) {
    ssize_t n = write(fd, text.data() + done, text.size() - done);
    if (n <= 0 && errno != EINTR) return;
    if (n > 0) done += static_cast<std::size_t>(n);
  }
}

class Supervisor {
 public:
  explicit Supervisor(SupervisorSetup setup) : setup_(std::move(setup)) {
    restart_times_.resize(setup_.services.size());
    restart_due_ms_.resize(setup_.services.size(), 0);
    stdin_fds_.resize(setup_.services.size(), -1);
  }

  int run() {
    sigemptyset(&signals_);
    for (int sig : {SIGTERM, SIGINT, SIGHUP, SIGCHLD}) sigaddset(&signals_, sig);
    sigprocmask(SIG_BLOCK, &signals_, nullptr);

    ClusterState& state = setup_.state;
    state.supervisor_pid = getpid();
    state.supervisor_start_ticks = process_start_ticks(getpid());
    state.supervisor_started_at = wall_seconds();
    state.supervisor_state = "running";
    state.drain_timeout_ms = setup_.local.drain_timeout_ms;
    DICE_LOG(Info) << "supervisor started" << kv("pid", getpid())
                   << kv("services", setup_.services.size());
    for (std::size_t i = 0; i < setup_.services.size(); ++i) launch(i);
    if (!save()) return 1;

    while (true) {
      siginfo_t info;
      timespec wait = to_timespec(next_wakeup_ms() - monotonic_ms());
      int sig = sigtimedwait(&signals_, &info, &wait);
      if ((sig == SIGTERM || sig == SIGINT || sig == SIGHUP) && !draining_) begin_drain(sig);
      reap();
      if (draining_) {
        if (running_count() == 0) break;
        if (monotonic_ms() >= drain_deadline_ms_) {
          kill_leftovers();
          break;
        }
      } else {
        restart_due();
      }
      save();
    }
    state.supervisor_state = "stopped";
    save();
    for (std::size_t i = 0; i < stdin_fds_.size(); ++i) close_stdin(i);
    end_helpers();
    DICE_LOG(Info) << "supervisor stopped";
    return 0;
  }

 private:
  static timespec to_timespec(std::int64_t ms) {
    ms = std::clamp<std::int64_t>(ms, 1, 1000);
    return timespec{static_cast<time_t>(ms / 1000), static_cast<long>((ms % 1000) * 1000000)};
  }

  std::int64_t next_wakeup_ms() const {
    std::int64_t next = monotonic_ms() + 1000;
    if (draining_) return std::min(next, drain_deadline_ms_);
    for (std::size_t i = 0; i < restart_due_ms_.size(); ++i) {
      if (setup_.state.services[i].state == ServiceRunState::kRestarting) {
        next = std::min(next, restart_due_ms_[i]);
      }
    }
    return next;
  }

  bool save() {
    Status status = write_state_file(setup_.state_dir, setup_.state);
    if (!status.ok()) {
      DICE_LOG(Error) << "cannot save state" << kv("error", status.message());
    }
    return status.ok();
  }

  void launch(std::size_t i) {
    const ServiceSpec& spec = setup_.services[i];
    ServiceState& s = setup_.state.services[i];
    int log_fd = open(s.log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (log_fd < 0) {
      DICE_LOG(Error) << "cannot open service log" << kv("service", s.name) << kv("log", s.log_path)
                      << kv("error", std::strerror(errno));
      on_failure(i, "cannot open log " + s.log_path);
      return;
    }
    std::string command = spec.executable;
    for (const auto& arg : spec.args) command += " " + arg;
    write_all(log_fd, "=== dice-cluster: " + format_utc(wall_seconds()) + " starting " + s.name +
                          " (restarts so far: " + std::to_string(s.restarts) + "): " + command +
                          "\n");
    std::vector<char*> argv;
    argv.push_back(const_cast<char*>(spec.executable.c_str()));
    for (const auto& arg : spec.args) argv.push_back(const_cast<char*>(arg.c_str()));
    argv.push_back(nullptr);
    // The environment, with CUDA_VISIBLE_DEVICES naming the service's GPUs (built before fork:
    // the child only calls async-signal-safe functions).
    const std::string devices = visible_devices(spec);
    const std::string devices_var = "CUDA_VISIBLE_DEVICES=" + devices;
    std::vector<char*> envp;
    for (char** e = environ; *e != nullptr; ++e) {
      if (!devices.empty() && std::strncmp(*e, "CUDA_VISIBLE_DEVICES=", 21) == 0) continue;
      envp.push_back(*e);
    }
    if (!devices.empty()) envp.push_back(const_cast<char*>(devices_var.c_str()));
    envp.push_back(nullptr);
    // An ssh service reads a pipe that only this process writes to: when the supervisor dies, the
    // pipe ends, and the remote start script stops the service (remote_commands.h).
    int stdin_pipe[2] = {-1, -1};
    const bool remote = !s.ssh.empty();
    if (remote && pipe2(stdin_pipe, O_CLOEXEC) != 0) {
      close(log_fd);
      on_failure(i, std::string("pipe failed: ") + std::strerror(errno));
      return;
    }
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid == 0) {
      // The child: its output to the log, no inherited signal mask, and SIGTERM if the supervisor
      // dies without draining (so a killed supervisor leaves no orphans running).
      int in_fd = remote ? stdin_pipe[0] : open("/dev/null", O_RDONLY);
      if (in_fd >= 0) dup2(in_fd, STDIN_FILENO);
      dup2(log_fd, STDOUT_FILENO);
      dup2(log_fd, STDERR_FILENO);
      sigset_t none;
      sigemptyset(&none);
      sigprocmask(SIG_SETMASK, &none, nullptr);
      prctl(PR_SET_PDEATHSIG, SIGTERM);
      if (getppid() != parent) _exit(1);
      execve(argv[0], argv.data(), envp.data());
      write_all(STDERR_FILENO, std::string("dice-cluster: cannot run ") + argv[0] + ": " +
                                   std::strerror(errno) + "\n");
      _exit(127);
    }
    close(log_fd);
    if (remote) {
      close(stdin_pipe[0]);
      stdin_fds_[i] = stdin_pipe[1];
    }
    if (pid < 0) {
      close_stdin(i);
      on_failure(i, std::string("fork failed: ") + std::strerror(errno));
      return;
    }
    s.pid = pid;
    s.start_ticks = process_start_ticks(pid);
    s.state = ServiceRunState::kRunning;
    s.started_at = wall_seconds();
    DICE_LOG(Info) << "service started" << kv("service", s.name) << kv("pid", pid)
                   << kv("restarts", s.restarts);
  }

  // A launch failure or a failed exit: restart after the backoff, or give up.
  void on_failure(std::size_t i, const std::string& why) {
    ServiceState& s = setup_.state.services[i];
    const LocalOptions& local = setup_.local;
    if (local.max_restarts_per_run > 0 && s.restarts >= local.max_restarts_per_run) {
      s.state = ServiceRunState::kFailed;
      DICE_LOG(Error) << "giving up on service: too many restarts in this run"
                      << kv("service", s.name) << kv("restarts", s.restarts)
                      << kv("max_restarts_per_run", local.max_restarts_per_run)
                      << kv("last_exit", why) << kv("log", s.log_path);
      stop_if_role_is_gone(s, why + " after " + std::to_string(s.restarts) +
                                  " restarts in this run (cluster.local.max_restarts_per_run)");
      return;
    }
    std::int64_t now = monotonic_ms();
    auto& times = restart_times_[i];
    while (!times.empty() && now - times.front() > local.restart_window_s * 1000LL) {
      times.pop_front();
    }
    if (static_cast<int>(times.size()) >= local.max_restarts) {
      s.state = ServiceRunState::kFailed;
      DICE_LOG(Error) << "giving up on service: too many restarts" << kv("service", s.name)
                      << kv("restarts_in_window", times.size())
                      << kv("window_s", local.restart_window_s) << kv("last_exit", why)
                      << kv("log", s.log_path);
      stop_if_role_is_gone(s, why);
      return;
    }
    std::int64_t delay = local.restart_backoff_ms;
    for (std::size_t k = 0; k < times.size() && delay < local.restart_backoff_max_ms; ++k) {
      delay *= 2;
    }
    delay = std::min<std::int64_t>(delay, local.restart_backoff_max_ms);
    times.push_back(now);
    restart_due_ms_[i] = now + delay;
    s.state = ServiceRunState::kRestarting;
    DICE_LOG(Warn) << "service ended; restarting after backoff" << kv("service", s.name)
                   << kv("last_exit", why) << kv("backoff_ms", delay) << kv("log", s.log_path);
  }

  // Without any live service of a role the run cannot move (the learner would wait for a reward
  // worker forever, and `wait` with it): drain the rest and say why, rather than hang.
  void stop_if_role_is_gone(const ServiceState& failed, const std::string& why) {
    if (failed.role == "dash") return;  // the dashboard only reads the run's log
    for (const auto& s : setup_.state.services) {
      if (s.role == failed.role && s.state != ServiceRunState::kFailed &&
          s.state != ServiceRunState::kExited && s.state != ServiceRunState::kStopped) {
        return;
      }
    }
    if (draining_) return;
    setup_.state.stop_reason = "no " + failed.role + " service left: " + failed.name +
                               " gave up (" + why + "); its log: " + failed.log_path;
    DICE_LOG(Error) << "stopping the run: a role has no service left" << kv("role", failed.role)
                    << kv("reason", setup_.state.stop_reason);
    begin_drain(0);
  }

  // A service that exited with bad input (kExitBadInput), for want of disk space
  // (kExitNoDiskSpace) or of a GPU or toolchain on its node (kExitNoDevice) is not restarted: it
  // would fail the same way, and each learner restart redoes a step's rollouts first. The run
  // drains and says why. The dashboard only reads the run's log, so its end stops nothing.
  void stop_without_restart(ServiceState& s, int code) {
    s.state = ServiceRunState::kFailed;
    const std::string why =
        s.name + " exited with status " + std::to_string(code) +
        (code == kExitNoDiskSpace
             ? " (no disk space: a write it must make did not fit; free space, then resume)"
         : code == kExitNoDevice
             ? " (no device: its node has no GPU or toolchain it needs; fix the node or the "
               "plan, then resume)"
             : " (bad input: a missing or invalid file or setting)") +
        ", not restarted; its log: " + s.log_path;
    DICE_LOG(Error) << "service ended; not restarted" << kv("service", s.name) << kv("status", code)
                    << kv("log", s.log_path);
    if (s.role == "dash" || draining_) return;
    setup_.state.stop_reason = why;
    DICE_LOG(Error) << "stopping the run" << kv("reason", why);
    begin_drain(0);
  }

  void reap() {
    int status = 0;
    pid_t pid;
    while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
      helpers_.erase(std::remove(helpers_.begin(), helpers_.end(), pid), helpers_.end());
      for (std::size_t i = 0; i < setup_.state.services.size(); ++i) {
        ServiceState& s = setup_.state.services[i];
        if (s.pid != pid) continue;
        s.pid = 0;
        s.start_ticks = 0;
        s.last_exit = describe_exit(status, !s.ssh.empty());
        close_stdin(i);
        if (draining_) {
          s.state = ServiceRunState::kStopped;
        } else if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
          s.state = ServiceRunState::kExited;
          DICE_LOG(Info) << "service exited cleanly; not restarted" << kv("service", s.name);
        } else if (WIFEXITED(status) && (WEXITSTATUS(status) == kExitBadInput ||
                                         WEXITSTATUS(status) == kExitNoDiskSpace ||
                                         WEXITSTATUS(status) == kExitNoDevice)) {
          stop_without_restart(s, WEXITSTATUS(status));
        } else {
          on_failure(i, s.last_exit);
        }
      }
    }
  }

  void restart_due() {
    std::int64_t now = monotonic_ms();
    for (std::size_t i = 0; i < setup_.state.services.size(); ++i) {
      ServiceState& s = setup_.state.services[i];
      if (s.state == ServiceRunState::kRestarting && now >= restart_due_ms_[i]) {
        ++s.restarts;
        launch(i);
      }
    }
  }

  void begin_drain(int sig) {
    draining_ = true;
    drain_deadline_ms_ = monotonic_ms() + setup_.local.drain_timeout_ms;
    setup_.state.supervisor_state = "draining";
    DICE_LOG(Info) << "draining: SIGTERM to every service" << kv("signal", sig)
                   << kv("drain_timeout_ms", setup_.local.drain_timeout_ms);
    // An ssh client passes no signal on to its remote service: that takes a second ssh per host,
    // started here and reaped with the services' exits.
    for (const auto& argv : sweep_commands(setup_.state.run_id, setup_.state.services, "TERM")) {
      spawn(argv);
    }
    for (auto& s : setup_.state.services) {
      if (s.pid > 0) {
        if (s.ssh.empty()) kill(s.pid, SIGTERM);
      } else if (s.state == ServiceRunState::kRestarting || s.state == ServiceRunState::kStarting) {
        s.state = ServiceRunState::kStopped;
      }
    }
  }

  int running_count() const {
    int n = 0;
    for (const auto& s : setup_.state.services) n += s.pid > 0;
    return n;
  }

  void kill_leftovers() {
    // Remote services first (one ssh per host, waited for), while their ssh clients still run.
    Result<std::map<std::string, pid_t>> killed =
        sweep_remote(setup_.state.run_id, setup_.state.services, "KILL");
    if (!killed.ok()) {
      DICE_LOG(Error) << "cannot SIGKILL remote services; `dice-cluster down` checks again"
                      << kv("error", killed.status().message());
    }
    for (auto& s : setup_.state.services) {
      if (s.pid <= 0) continue;
      DICE_LOG(Warn) << "service still running after the drain timeout; SIGKILL"
                     << kv("service", s.name) << kv("pid", s.pid);
      kill(s.pid, SIGKILL);
      int status = 0;
      while (waitpid(s.pid, &status, 0) < 0 && errno == EINTR) {
      }
      s.pid = 0;
      s.start_ticks = 0;
      s.last_exit = describe_exit(status, !s.ssh.empty());
      s.state = ServiceRunState::kStopped;
    }
  }

  void close_stdin(std::size_t i) {
    if (stdin_fds_[i] >= 0) close(stdin_fds_[i]);
    stdin_fds_[i] = -1;
  }

  // Starts argv (argv[0] a path) without waiting: output to the supervisor's log, signals
  // unblocked. reap() collects it; end_helpers() ends it if it outlives the drain.
  void spawn(const std::vector<std::string>& argv) {
    std::vector<char*> args;
    for (const auto& arg : argv) args.push_back(const_cast<char*>(arg.c_str()));
    args.push_back(nullptr);
    pid_t pid = fork();
    if (pid == 0) {
      int null_fd = open("/dev/null", O_RDONLY);
      if (null_fd >= 0) dup2(null_fd, STDIN_FILENO);
      sigset_t none;
      sigemptyset(&none);
      sigprocmask(SIG_SETMASK, &none, nullptr);
      execv(args[0], args.data());
      _exit(127);
    }
    if (pid < 0) {
      DICE_LOG(Error) << "cannot start" << kv("command", command_line(argv))
                      << kv("error", std::strerror(errno));
    } else {
      helpers_.push_back(pid);
    }
  }

  // Once drained, a helper still running has nothing left to do (its services are gone; or its
  // host is unreachable, which `dice-cluster down` reports): it ends with the supervisor.
  void end_helpers() {
    for (pid_t pid : helpers_) {
      kill(pid, SIGKILL);
      while (waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
      }
    }
    helpers_.clear();
  }

  SupervisorSetup setup_;
  sigset_t signals_;
  bool draining_ = false;
  std::int64_t drain_deadline_ms_ = 0;
  std::vector<std::deque<std::int64_t>> restart_times_;
  std::vector<std::int64_t> restart_due_ms_;
  std::vector<int> stdin_fds_;  // write end of each ssh service's stdin pipe; -1 if none
  std::vector<pid_t> helpers_;  // spawned ssh commands not reaped yet
};

}  // namespace

int run_supervisor(SupervisorSetup setup) {
  return Supervisor(std::move(setup)).run();
}

}  // namespace dice::cluster
