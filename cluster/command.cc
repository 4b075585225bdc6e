#include "cluster/command.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <sstream>

namespace dice::cluster {
namespace {

// Closes both ends of a pipe on scope exit (the parent's ends are closed as it reads them).
struct Pipe {
  int fds[2] = {-1, -1};
  ~Pipe() {
    for (int fd : fds) {
      if (fd >= 0) close(fd);
    }
  }
  void close_end(int i) {
    if (fds[i] >= 0) close(fds[i]);
    fds[i] = -1;
  }
};

}  // namespace

std::string find_on_path(const std::string& name) {
  if (name.empty()) return {};
  if (name.find('/') != std::string::npos) return access(name.c_str(), X_OK) == 0 ? name : "";
  const char* path = std::getenv("PATH");
  std::stringstream entries(path == nullptr ? "" : path);
  std::string entry;
  while (std::getline(entries, entry, ':')) {
    if (entry.empty()) continue;
    std::string candidate = entry + "/" + name;
    if (access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return {};
}

std::string command_line(const std::vector<std::string>& argv) {
  std::string line;
  for (const auto& arg : argv) line += (line.empty() ? "" : " ") + arg;
  return line;
}

Result<CommandResult> run_command(const std::vector<std::string>& argv) {
  if (argv.empty()) return Status::invalid_argument("run_command: empty command");
  std::string exe = find_on_path(argv[0]);
  if (exe.empty()) {
    const char* path = std::getenv("PATH");
    return Status::not_found("'" + argv[0] + "' not found on PATH (" +
                             (path == nullptr ? "" : path) + ")");
  }
  Pipe out, err;
  if (pipe2(out.fds, O_CLOEXEC) != 0 || pipe2(err.fds, O_CLOEXEC) != 0) {
    return Status::io_error("pipe for " + argv[0] + ": " + std::strerror(errno));
  }
  std::vector<char*> args;
  for (const auto& arg : argv) args.push_back(const_cast<char*>(arg.c_str()));
  args.push_back(nullptr);
  pid_t pid = fork();
  if (pid < 0) return Status::io_error("fork for " + argv[0] + ": " + std::strerror(errno));
  if (pid == 0) {
    int null_fd = open("/dev/null", O_RDONLY);
    if (null_fd >= 0) dup2(null_fd, STDIN_FILENO);
    dup2(out.fds[1], STDOUT_FILENO);
    dup2(err.fds[1], STDERR_FILENO);
    execv(exe.c_str(), args.data());
    std::fprintf(stderr, "cannot run %s: %s\n", exe.c_str(), std::strerror(errno));
    _exit(127);
  }
  out.close_end(1);
  err.close_end(1);

  CommandResult result;
  pollfd fds[2] = {{out.fds[0], POLLIN, 0}, {err.fds[0], POLLIN, 0}};
  std::string* sinks[2] = {&result.out, &result.err};
  int open_count = 2;
  char buffer[4096];
  while (open_count > 0) {
    if (poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || fds[i].revents == 0) continue;
      ssize_t n = read(fds[i].fd, buffer, sizeof(buffer));
      if (n > 0) {
        sinks[i]->append(buffer, static_cast<std::size_t>(n));
      } else if (n == 0 || errno != EINTR) {
        fds[i].fd = -1;  // poll ignores negative fds; Pipe closes the fd
        --open_count;
      }
    }
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return result;
}

}  // namespace dice::cluster
