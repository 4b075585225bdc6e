// The host side of the adversarial corpus (tests/reward/adversarial): what a candidate that got
// out of its sandbox would leave behind, looked for from outside once its evaluation has
// returned, and the tally both corpus tests print ("adversarial corpus: tried N, caught M,
// escaped K").
//
// The corpus marks everything it tries to leave: files are named <mark><candidate>, processes
// carry the mark in their name (prctl) or command line, the SysV segment has key kShmKey. The
// CPU corpus's mark is kCpuMark, the GPU corpus's kGpuMark (neither contains the other, so the two
// tests can run at once). Marks, not "anything new", because other tests run sandboxes (of the
// same uid range) and write to /tmp meanwhile.
#pragma once

#include <string>
#include <vector>

namespace dice::adversarial {

constexpr const char* kCpuMark = "dice-adv-";
constexpr const char* kGpuMark = "dice-advgpu-";
// The key of the SysV shared-memory segment the corpus creates ("dadv").
constexpr long kShmKey = 0x64616476;
// The loopback port the corpus connects to; the test listens there.
constexpr int kTcpPort = 47631;
// The host Unix socket the corpus connects to by path, and the abstract one.
constexpr const char* kUnixSocketDir = "/run/dice-adv";
constexpr const char* kUnixSocketPath = "/run/dice-adv/host.sock";
constexpr const char* kAbstractSocketName = "dice-adv-host";

// Paths whose name starts with `mark` in the folders the corpus writes to (/tmp, /var/tmp,
// /run/lock, /run, /dev/shm, /root, /home/*, the homes of /etc/passwd).
std::vector<std::string> marked_files(const std::string& mark);
// Removes them (after they were reported, or left by an earlier run of the test).
void remove_files(const std::vector<std::string>& paths);

struct HostProcess {
  int pid = 0;
  long uid = -1;
  std::string name;  // comm, then the command line
};
// Processes of a sandbox uid (reward/sandbox/sandbox.h's range) whose name or command line holds
// `mark`, still running `grace_seconds` from now (processes of a sandbox that just ended are
// being killed with its PID namespace: each is given until then to go).
std::vector<HostProcess> marked_processes(const std::string& mark, double grace_seconds);
// SIGKILL, by pid, to processes marked_processes() found.
void kill_processes(const std::vector<HostProcess>& processes);

struct ShmSegment {
  long key = 0;
  int shmid = -1;
  long creator_uid = -1;
};
// /proc/sysvipc/shm.
std::vector<ShmSegment> shm_segments();
// Segments not in `before` with key kShmKey or a sandbox uid as their creator.
std::vector<ShmSegment> new_marked_segments(const std::vector<ShmSegment>& before);
// shmctl(IPC_RMID) on each.
void remove_segments(const std::vector<ShmSegment>& segments);

// Listening sockets of the host: the Unix socket by path (kUnixSocketPath, connectable by any
// uid), the abstract one and 127.0.0.1:kTcpPort. Non-blocking; closed on destruction.
class HostListeners {
 public:
  HostListeners();
  ~HostListeners();
  HostListeners(const HostListeners&) = delete;
  HostListeners& operator=(const HostListeners&) = delete;
  // "" when all three listen, else what failed (another run of the test holding them, say).
  const std::string& error() const { return error_; }
  // Accepts every pending connection and reads what it sent: "" when nothing connected, else a
  // description ("1 connection to unix:/run/dice-adv/host.sock, 36 bytes: ...").
  std::string drain();

 private:
  struct Listener {
    int fd = -1;
    std::string name;
  };
  std::vector<Listener> listeners_;
  std::string error_;
  bool owns_path_ = false;  // the socket file is this object's to remove
};

// One attack's outcome, counted and printed by Tally.
class Tally {
 public:
  // `why` explains an escape ("judged correct; left /run/lock/dice-adv-x").
  void add(const std::string& file, bool escaped, const std::string& why);
  int tried() const { return tried_; }
  int escaped() const { return static_cast<int>(escapes_.size()); }
  // "adversarial corpus: tried N, caught M, escaped K", then one line per escape.
  std::string summary() const;

 private:
  int tried_ = 0;
  std::vector<std::string> escapes_;
};

}  // namespace dice::adversarial
