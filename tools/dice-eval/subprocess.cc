#include "tools/dice-eval/subprocess.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <deque>
#include <fstream>

namespace dice::eval {
namespace {

int exit_status(int status) {
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

}  // namespace

Result<Subprocess> Subprocess::start(const std::vector<std::string>& argv,
                                     const std::string& log_path, bool die_with_parent) {
  if (argv.empty()) return Status::internal("Subprocess::start: no program");
  const int log_fd = open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (log_fd < 0) {
    return Status::io_error(log_path + ": cannot open for the output of " + argv[0] + ": " +
                            std::strerror(errno));
  }
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid < 0) {
    const std::string why = std::strerror(errno);
    close(log_fd);
    return Status::io_error("fork for " + argv[0] + ": " + why);
  }
  if (pid == 0) {
    if (die_with_parent) {
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (getppid() != parent) _exit(1);  // the parent died before the line above
    }
    setpgid(0, 0);  // out of the terminal's foreground group: Ctrl-C is dice-eval's to handle
    // The services' own signal handling is theirs: the child starts with default handlers.
    ::signal(SIGINT, SIG_DFL);
    ::signal(SIGTERM, SIG_DFL);
    ::signal(SIGHUP, SIG_DFL);
    const int null_fd = open("/dev/null", O_RDONLY);
    if (null_fd >= 0) dup2(null_fd, STDIN_FILENO);
    dup2(log_fd, STDOUT_FILENO);
    dup2(log_fd, STDERR_FILENO);
    execv(args[0], args.data());
    _exit(127);
  }
  close(log_fd);
  return Subprocess(pid);
}

Subprocess::Subprocess(Subprocess&& other) noexcept : pid_(other.pid_), status_(other.status_) {
  other.pid_ = -1;
}

Subprocess& Subprocess::operator=(Subprocess&& other) noexcept {
  if (this != &other) {
    if (pid_ > 0 && !status_) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
    pid_ = other.pid_;
    status_ = other.status_;
    other.pid_ = -1;
  }
  return *this;
}

Subprocess::~Subprocess() {
  if (pid_ > 0 && !status_) {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
}

std::optional<int> Subprocess::poll() {
  if (status_ || pid_ <= 0) return status_;
  int status = 0;
  const pid_t done = waitpid(pid_, &status, WNOHANG);
  if (done == pid_) status_ = exit_status(status);
  return status_;
}

int Subprocess::wait() {
  while (!status_ && pid_ > 0) {
    int status = 0;
    const pid_t done = waitpid(pid_, &status, 0);
    if (done == pid_) {
      status_ = exit_status(status);
    } else if (done < 0 && errno != EINTR) {
      status_ = 127;
    }
  }
  return status_.value_or(127);
}

void Subprocess::signal(int sig) {
  if (pid_ > 0 && !status_) kill(pid_, sig);
}

Result<int> run_to_end(const std::vector<std::string>& argv, const std::string& log_path) {
  DICE_ASSIGN_OR_RETURN(Subprocess child, Subprocess::start(argv, log_path, false));
  return child.wait();
}

std::string tail_of_file(const std::string& path, int lines) {
  std::ifstream in(path);
  if (!in) return "";
  std::deque<std::string> last;
  std::string line;
  while (std::getline(in, line)) {
    last.push_back(line);
    if (static_cast<int>(last.size()) > lines) last.pop_front();
  }
  std::string out;
  for (const std::string& l : last) out += l + "\n";
  return out;
}

}  // namespace dice::eval
