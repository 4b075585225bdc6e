#include "tests/reward/adversarial_host.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <sys/shm.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "common/remove_tree.h"
#include "reward/sandbox/sandbox.h"

namespace dice::adversarial {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

bool is_sandbox_uid(long uid) {
  return uid >= kSandboxUidBase && uid < kSandboxUidBase + kSandboxUidCount;
}

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The folders the corpus tries to leave files in.
std::vector<std::string> watched_folders() {
  std::set<std::string> folders = {"/tmp", "/var/tmp", "/run/lock", "/run", "/dev/shm", "/root"};
  std::error_code ec;
  for (const auto& home : fs::directory_iterator("/home", ec)) folders.insert(home.path());
  setpwent();
  while (const passwd* entry = getpwent()) {
    if (entry->pw_dir != nullptr && *entry->pw_dir == '/') folders.insert(entry->pw_dir);
  }
  endpwent();
  return {folders.begin(), folders.end()};
}

// The real uid of a process (the first number of /proc/<pid>/status's Uid line), -1 if gone.
long process_uid(const std::string& status) {
  const size_t at = status.find("\nUid:");
  if (at == std::string::npos) return -1;
  return std::strtol(status.c_str() + at + 5, nullptr, 10);
}

std::vector<HostProcess> marked_processes_now(const std::string& mark) {
  std::vector<HostProcess> found;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator("/proc", ec)) {
    const std::string pid = entry.path().filename();
    if (pid.empty() || pid.find_first_not_of("0123456789") != std::string::npos) continue;
    const long uid = process_uid(read_text("/proc/" + pid + "/status"));
    if (!is_sandbox_uid(uid)) continue;
    std::string comm = read_text("/proc/" + pid + "/comm");
    std::string cmdline = read_text("/proc/" + pid + "/cmdline");
    for (char& c : cmdline) c = c == '\0' ? ' ' : c;
    if (comm.find(mark) == std::string::npos && cmdline.find(mark) == std::string::npos) {
      continue;
    }
    while (!comm.empty() && comm.back() == '\n') comm.pop_back();
    found.push_back({std::stoi(pid), uid, comm + " (" + cmdline.substr(0, 120) + ")"});
  }
  return found;
}

// Waits until `pid` has exited or `deadline`; true when it has (or cannot be watched: gone).
bool exits_by(int pid, Clock::time_point deadline) {
  const int fd = static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
  if (fd < 0) return true;  // already gone
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  pollfd p{fd, POLLIN, 0};
  const int ready = poll(&p, 1, static_cast<int>(std::max<long>(0, left.count())));
  close(fd);
  return ready > 0;
}

}  // namespace

std::vector<std::string> marked_files(const std::string& mark) {
  std::vector<std::string> found;
  for (const auto& folder : watched_folders()) {
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(folder, ec)) {
      if (entry.path().filename().string().rfind(mark, 0) == 0) {
        found.push_back(entry.path());
      }
    }
  }
  return found;
}

void remove_files(const std::vector<std::string>& paths) {
  for (const auto& p : paths) {
    remove_tree(p).ignore();
  }
}

std::vector<HostProcess> marked_processes(const std::string& mark, double grace_seconds) {
  const auto deadline =
      Clock::now() + std::chrono::duration_cast<Clock::duration>(
                         std::chrono::duration<double>(std::max(0.0, grace_seconds)));
  std::vector<HostProcess> left;
  for (const HostProcess& p : marked_processes_now(mark)) {
    if (!exits_by(p.pid, deadline)) left.push_back(p);
  }
  return left;
}

void kill_processes(const std::vector<HostProcess>& processes) {
  for (const HostProcess& p : processes) kill(p.pid, SIGKILL);
}

std::vector<ShmSegment> shm_segments() {
  std::vector<ShmSegment> segments;
  std::istringstream in(read_text("/proc/sysvipc/shm"));
  std::string line;
  std::getline(in, line);  // the header
  while (std::getline(in, line)) {
    // key shmid perms size cpid lpid nattch uid gid cuid ...
    std::istringstream fields(line);
    ShmSegment s;
    long skip = 0;
    if (fields >> s.key >> s.shmid >> skip >> skip >> skip >> skip >> skip >> skip >> skip >>
        s.creator_uid) {
      segments.push_back(s);
    }
  }
  return segments;
}

std::vector<ShmSegment> new_marked_segments(const std::vector<ShmSegment>& before) {
  std::set<int> known;
  for (const auto& s : before) known.insert(s.shmid);
  std::vector<ShmSegment> found;
  for (const auto& s : shm_segments()) {
    if (known.count(s.shmid) == 0 && (s.key == kShmKey || is_sandbox_uid(s.creator_uid))) {
      found.push_back(s);
    }
  }
  return found;
}

void remove_segments(const std::vector<ShmSegment>& segments) {
  for (const auto& s : segments) shmctl(s.shmid, IPC_RMID, nullptr);
}

HostListeners::HostListeners() {
  auto fail = [this](const std::string& what) { error_ = what + ": " + std::strerror(errno); };
  sockaddr_in tcp_address{};
  tcp_address.sin_family = AF_INET;
  tcp_address.sin_port = htons(kTcpPort);
  tcp_address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  sockaddr_un abstract_address{};
  abstract_address.sun_family = AF_UNIX;
  std::strncpy(abstract_address.sun_path + 1, kAbstractSocketName,
               sizeof(abstract_address.sun_path) - 2);
  const socklen_t abstract_length = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 +
                                                           std::strlen(kAbstractSocketName));
  sockaddr_un path_address{};
  path_address.sun_family = AF_UNIX;
  std::strncpy(path_address.sun_path, kUnixSocketPath, sizeof(path_address.sun_path) - 1);

  struct Wanted {
    int family;
    const sockaddr* address;
    socklen_t length;
    std::string name;
  };
  // The exclusive ones first: while another run of the test holds them, the socket file (which
  // it listens on too) is left alone.
  const std::vector<Wanted> wanted = {
      {AF_INET, reinterpret_cast<const sockaddr*>(&tcp_address), sizeof(tcp_address),
       "tcp:127.0.0.1:" + std::to_string(kTcpPort)},
      {AF_UNIX, reinterpret_cast<const sockaddr*>(&abstract_address), abstract_length,
       std::string("unix:@") + kAbstractSocketName},
      {AF_UNIX, reinterpret_cast<const sockaddr*>(&path_address), sizeof(path_address),
       std::string("unix:") + kUnixSocketPath},
  };
  for (const Wanted& w : wanted) {
    const int fd = socket(w.family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
      fail("socket for " + w.name);
      return;
    }
    const int one = 1;
    if (w.family == AF_INET) setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (w.address == reinterpret_cast<const sockaddr*>(&path_address)) {
      // By path: a folder anyone may enter, a socket anyone may connect to. A file left by a
      // killed run is removed; one that answers belongs to a run still going.
      ::mkdir(kUnixSocketDir, 0755);
      if (connect(fd, w.address, w.length) == 0) {
        errno = EADDRINUSE;
        fail("listening on " + w.name + " (another run of the test listens there)");
        close(fd);
        return;
      }
      ::unlink(kUnixSocketPath);
    }
    if (bind(fd, w.address, w.length) != 0 || listen(fd, 64) != 0) {
      fail("listening on " + w.name);
      close(fd);
      return;
    }
    listeners_.push_back({fd, w.name});
  }
  owns_path_ = true;
  if (chmod(kUnixSocketPath, 0777) != 0) fail(std::string("chmod ") + kUnixSocketPath);
}

HostListeners::~HostListeners() {
  for (const auto& l : listeners_) close(l.fd);
  if (owns_path_) {
    ::unlink(kUnixSocketPath);
    ::rmdir(kUnixSocketDir);
  }
}

std::string HostListeners::drain() {
  std::string report;
  for (const auto& l : listeners_) {
    int connections = 0;
    std::string bytes;
    for (;;) {
      const int conn = accept4(l.fd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (conn < 0) break;  // EAGAIN: nothing (more) pending
      ++connections;
      char buf[4096];
      ssize_t n;
      while ((n = read(conn, buf, sizeof(buf))) > 0) bytes.append(buf, static_cast<size_t>(n));
      close(conn);
    }
    if (connections == 0) continue;
    for (char& c : bytes) c = (c == '\n' || c == '\r') ? ' ' : c;
    report += (report.empty() ? "" : "; ") + std::to_string(connections) + " connection(s) to " +
              l.name + ", " + std::to_string(bytes.size()) + " bytes: \"" + bytes.substr(0, 80) +
              "\"";
  }
  return report;
}

void Tally::add(const std::string& file, bool escaped, const std::string& why) {
  ++tried_;
  if (escaped) escapes_.push_back(file + ": " + why);
}

std::string Tally::summary() const {
  std::ostringstream out;
  out << "adversarial corpus: tried " << tried_ << ", caught " << tried_ - escaped() << ", escaped "
      << escaped();
  for (const auto& e : escapes_) out << "\n  escaped: " << e;
  return out.str();
}

}  // namespace dice::adversarial
