#include "cluster/process.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <ctime>
#include <sstream>

namespace dice::cluster {
namespace {

// /proc/PID/stat: "pid (comm) S ppid ...": comm may hold spaces or ')', so split after the last
// ')'.
// Read with read(2), not an ifstream: a process that exits between open and read makes the read
// fail with ESRCH, which libstdc++'s filebuf turns into an exception even with exceptions off.
bool read_stat(pid_t pid, char* state, std::uint64_t* start_ticks) {
  const std::string path = "/proc/" + std::to_string(pid) + "/stat";
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  std::string text;
  char buffer[1024];
  for (ssize_t n; (n = ::read(fd, buffer, sizeof(buffer))) != 0;) {
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) break;  // gone (ESRCH): the text so far has no start time, so not alive
    text.append(buffer, static_cast<std::size_t>(n));
  }
  ::close(fd);
  std::size_t close = text.rfind(')');
  if (close == std::string::npos) return false;
  std::istringstream fields(text.substr(close + 1));
  std::string field;
  // After comm: field 3 is the state, field 22 the start time.
  for (int index = 3; index <= 22 && fields >> field; ++index) {
    if (index == 3) *state = field.empty() ? '?' : field[0];
    if (index == 22) {
      *start_ticks = std::stoull(field);
      return true;
    }
  }
  return false;
}

}  // namespace

std::uint64_t process_start_ticks(pid_t pid) {
  char state = '?';
  std::uint64_t ticks = 0;
  return read_stat(pid, &state, &ticks) ? ticks : 0;
}

bool process_alive(pid_t pid, std::uint64_t start_ticks) {
  if (pid <= 0) return false;
  if (kill(pid, 0) != 0 && errno == ESRCH) return false;
  char state = '?';
  std::uint64_t ticks = 0;
  if (!read_stat(pid, &state, &ticks)) return false;
  if (state == 'Z' || state == 'X') return false;
  return start_ticks == 0 || ticks == start_ticks;
}

double wall_seconds() {
  using namespace std::chrono;
  return duration<double>(system_clock::now().time_since_epoch()).count();
}

std::int64_t monotonic_ms() {
  using namespace std::chrono;
  return duration_cast<milliseconds>(steady_clock::now().time_since_epoch()).count();
}

std::string format_utc(double seconds) {
  std::time_t t = static_cast<std::time_t>(seconds);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buffer[32];
  std::strftime(buffer, sizeof(buffer), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buffer;
}

std::string self_executable() {
  char buffer[4096];
  ssize_t n = readlink("/proc/self/exe", buffer, sizeof(buffer) - 1);
  if (n <= 0) return {};
  return std::string(buffer, static_cast<std::size_t>(n));
}

}  // namespace dice::cluster
