#include "reward/sandbox/sandbox_netns.h"

#include <fcntl.h>
#include <net/if.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <string>
#include <thread>
#include <utility>

#include "common/log.h"

namespace dice {
namespace {

// The namespace of the calling thread; /proc/self would name the main thread's.
constexpr char kThreadNetns[] = "/proc/thread-self/ns/net";

// Namespaces kept ready beyond the most ever leased at once, so a run rarely waits for the
// refill thread (on a loaded host, a scheduler latency) when another run's namespace is about to
// come back.
constexpr int kSpareNamespaces = 2;

// Reads the start of `path` into `buf` (NUL-terminated); the bytes read, or -1 when it cannot be
// opened (a protocol this kernel lacks). System calls only.
ssize_t read_head(const char* path, char* buf, size_t size) {
  const int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  size_t used = 0;
  for (;;) {
    const ssize_t n = read(fd, buf + used, size - 1 - used);
    if (n <= 0) break;
    used += static_cast<size_t>(n);
    if (used == size - 1) break;
  }
  close(fd);
  buf[used] = '\0';
  return static_cast<ssize_t>(used);
}

int count_lines(const char* text) {
  int lines = 0;
  for (const char* c = text; *c != '\0'; ++c) lines += *c == '\n';
  return lines;
}

// Whether every count after `key` in `text` (e.g. "inuse " in /proc/net/sockstat) is 0.
bool all_zero_after(const char* text, const char* key) {
  const size_t key_len = std::strlen(key);
  for (const char* at = std::strstr(text, key); at != nullptr; at = std::strstr(at, key)) {
    at += key_len;
    if (at[0] != '0' || (at[1] != ' ' && at[1] != '\n')) return false;
  }
  return true;
}

}  // namespace

bool netns_is_pristine() {
  // The socket counts of this namespace: "sockets: used" counts every socket in it (bound or
  // not, in flight over a unix socket or not), "tw" TCP TIME_WAIT entries, which are not
  // sockets. Read first: the probe socket below would count. (The socket tables in /proc/net
  // are no substitute: reading tcp walks the host-wide hash, ~4 ms on the dev VM.)
  char buf[1024];
  for (const char* stats : {"/proc/self/net/sockstat", "/proc/self/net/sockstat6"}) {
    const ssize_t n = read_head(stats, buf, sizeof(buf));
    if (n < 0 && stats[std::strlen(stats) - 1] == '6') continue;  // a kernel without IPv6
    if (n <= 0 || !all_zero_after(buf, "used ") || !all_zero_after(buf, "inuse ") ||
        !all_zero_after(buf, "tw ")) {
      return false;
    }
  }
  // Two header lines, then one line per interface: exactly "  lo: ...".
  const ssize_t n = read_head("/proc/self/net/dev", buf, sizeof(buf));
  if (n <= 0 || n == static_cast<ssize_t>(sizeof(buf)) - 1 || count_lines(buf) != 3) return false;
  const char* line = buf;
  for (int skip = 0; skip < 2; ++skip) line = std::strchr(line, '\n') + 1;
  while (*line == ' ') ++line;
  if (std::strncmp(line, "lo:", 3) != 0) return false;
  const int probe = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (probe < 0) return false;
  ifreq request{};
  std::memcpy(request.ifr_name, "lo", 3);
  const bool down = ioctl(probe, SIOCGIFFLAGS, &request) == 0 && !(request.ifr_flags & IFF_UP);
  close(probe);
  return down;
}

struct NetnsPool::State {
  std::mutex mutex;
  // Wakes the refill thread and acquirers alike: every change is rare next to a process start.
  std::condition_variable changed;
  std::deque<int> idle;  // handed out oldest first
  int leased_now = 0;
  // Namespaces to keep (idle + leased): the most ever leased at once plus kSpareNamespaces, or
  // prewarm()'s count.
  int target = 0;
  int waiters = 0;  // acquire() calls waiting for an idle namespace
  bool thread_started = false;
  Status broken = Status::ok_status();        // set when this process may not create namespaces
  Status last_failure = Status::ok_status();  // of the latest creation
  std::int64_t failures = 0;                  // creation failures so far (waiters compare)
  NetnsPoolStats stats;

  bool need_create() const {
    if (!broken.ok()) return false;
    const int have = static_cast<int>(idle.size()) + leased_now;
    return waiters > static_cast<int>(idle.size()) || have < target;
  }
};

NetnsLease::NetnsLease(NetnsLease&& other) noexcept
    : pool_(std::exchange(other.pool_, nullptr)),
      fd_(std::exchange(other.fd_, -1)),
      reusable_(other.reusable_) {}

NetnsLease& NetnsLease::operator=(NetnsLease&& other) noexcept {
  if (this != &other) {
    give_back();
    pool_ = std::exchange(other.pool_, nullptr);
    fd_ = std::exchange(other.fd_, -1);
    reusable_ = other.reusable_;
  }
  return *this;
}

NetnsLease::~NetnsLease() {
  give_back();
}

void NetnsLease::give_back() {
  if (pool_ != nullptr && fd_ >= 0) pool_->give_back(fd_, reusable_);
  pool_ = nullptr;
  fd_ = -1;
}

NetnsPool& NetnsPool::shared() {
  static NetnsPool* pool = new NetnsPool();
  return *pool;
}

NetnsPool::NetnsPool() : state_(new State) {}

Result<NetnsLease> NetnsPool::acquire(std::chrono::milliseconds wait) {
  State& s = *state_;
  std::unique_lock<std::mutex> lock(s.mutex);
  if (!s.broken.ok()) return s.broken;
  if (!s.thread_started) {
    s.thread_started = true;
    std::thread([this] { refill_loop(); }).detach();
  }
  const std::int64_t failures_before = s.failures;
  if (s.idle.empty()) {
    // Woken by whichever comes first: a run returning its namespace, or the refill thread.
    ++s.waiters;
    s.changed.notify_all();
    s.changed.wait_for(lock, wait, [&] {
      return !s.broken.ok() || s.failures != failures_before || !s.idle.empty();
    });
    --s.waiters;
  }
  if (!s.broken.ok()) return s.broken;
  if (s.idle.empty()) {
    if (s.failures != failures_before) return s.last_failure;
    return Status::timeout("sandbox: no network namespace ready after " +
                           std::to_string(wait.count()) + " ms");
  }
  const int fd = s.idle.front();
  s.idle.pop_front();
  ++s.leased_now;
  ++s.stats.leased;
  s.target = std::max(s.target, s.leased_now + kSpareNamespaces);
  s.changed.notify_all();  // the refill thread may owe a spare
  return NetnsLease(this, fd);
}

void NetnsPool::prewarm(int count) {
  State& s = *state_;
  std::lock_guard<std::mutex> lock(s.mutex);
  s.target = std::max(s.target, count);
  if (!s.thread_started && s.broken.ok()) {
    s.thread_started = true;
    std::thread([this] { refill_loop(); }).detach();
  }
  s.changed.notify_all();
}

NetnsPoolStats NetnsPool::stats() const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  NetnsPoolStats stats = state_->stats;
  stats.idle = static_cast<std::int64_t>(state_->idle.size());
  return stats;
}

void NetnsPool::give_back(int fd, bool reusable) {
  if (!reusable) close(fd);  // the kernel tears it down in its own work queue
  std::lock_guard<std::mutex> lock(state_->mutex);
  --state_->leased_now;
  if (reusable) {
    state_->idle.push_back(fd);
  } else {
    ++state_->stats.discarded;
  }
  state_->changed.notify_all();  // a waiter, or the refill thread owing a replacement
}

// The only thread that changes its network namespace: it unshare()s to create one and goes
// home after each, so it never pins one.
void NetnsPool::refill_loop() {
  State& s = *state_;
  const int home = open(kThreadNetns, O_RDONLY | O_CLOEXEC);
  if (home < 0) {
    std::lock_guard<std::mutex> lock(s.mutex);
    s.broken = Status::unavailable(std::string("sandbox: cannot open ") + kThreadNetns + ": " +
                                   strerror(errno));
    s.changed.notify_all();
    return;
  }
  std::unique_lock<std::mutex> lock(s.mutex);
  for (;;) {
    s.changed.wait(lock, [&] { return s.need_create(); });
    lock.unlock();
    int fd = -1;
    int err = 0;
    if (unshare(CLONE_NEWNET) != 0) {
      err = errno;
    } else {
      fd = open(kThreadNetns, O_RDONLY | O_CLOEXEC);
      if (fd < 0) err = errno;
      if (setns(home, CLONE_NEWNET) != 0) {
        DICE_LOG(Error) << "sandbox: the namespace pool's thread cannot return home"
                        << kv("errno", strerror(errno));
      }
    }
    lock.lock();
    if (fd >= 0) {
      s.idle.push_back(fd);
      ++s.stats.created;
    } else {
      Status failure = Status::unavailable(
          std::string("sandbox: cannot create a network namespace: ") + strerror(err));
      if (err == EPERM) s.broken = failure;
      // Stop growing until the next acquire(), so a persistent failure (ENOSPC: the
      // user.max_net_namespaces limit) does not spin this thread.
      s.target = static_cast<int>(s.idle.size()) + s.leased_now;
      s.last_failure = std::move(failure);
      ++s.failures;
    }
    s.changed.notify_all();
  }
}

}  // namespace dice
