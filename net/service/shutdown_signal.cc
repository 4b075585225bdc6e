#include "net/service/shutdown_signal.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "common/log.h"

namespace dice::service {
namespace {

// The write end of the live instance's signal pipe, for the handler; -1 when none is installed.
std::atomic<int> g_signal_write_fd{-1};
struct sigaction g_previous_term;
struct sigaction g_previous_int;

// A byte sent by the destructor to stop the watcher; not a signal number.
constexpr unsigned char kStopWatcher = 0;

extern "C" void on_signal(int signal_number) {
  int saved_errno = errno;
  int fd = g_signal_write_fd.load(std::memory_order_relaxed);
  if (fd >= 0) {
    unsigned char byte = static_cast<unsigned char>(signal_number);
    // Non-blocking: if the pipe is somehow full, shutdown has been requested many times already.
    ssize_t ignored = ::write(fd, &byte, 1);
    (void)ignored;
  }
  errno = saved_errno;
}

Status errno_status(const std::string& what) {
  return Status::io_error("shutdown signal: " + what + ": " + std::strerror(errno));
}

void close_pair(int fds[2]) {
  for (int i = 0; i < 2; ++i) {
    if (fds[i] >= 0) ::close(fds[i]);
    fds[i] = -1;
  }
}

}  // namespace

Result<std::unique_ptr<ShutdownSignal>> ShutdownSignal::install() {
  std::unique_ptr<ShutdownSignal> signal(new ShutdownSignal());
  if (::pipe2(signal->signal_pipe_, O_CLOEXEC | O_NONBLOCK) != 0) return errno_status("pipe2");
  if (::pipe2(signal->notify_pipe_, O_CLOEXEC | O_NONBLOCK) != 0) return errno_status("pipe2");
  // The watcher blocks on the read end; only the handler's write end must never block.
  int flags = ::fcntl(signal->signal_pipe_[0], F_GETFL);
  ::fcntl(signal->signal_pipe_[0], F_SETFL, flags & ~O_NONBLOCK);

  int expected = -1;
  if (!g_signal_write_fd.compare_exchange_strong(expected, signal->signal_pipe_[1])) {
    return Status::unavailable("shutdown signal: another ShutdownSignal is already installed");
  }
  struct sigaction action;
  std::memset(&action, 0, sizeof action);
  action.sa_handler = on_signal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  if (::sigaction(SIGTERM, &action, &g_previous_term) != 0 ||
      ::sigaction(SIGINT, &action, &g_previous_int) != 0) {
    Status status = errno_status("sigaction");
    ::sigaction(SIGTERM, &g_previous_term, nullptr);
    g_signal_write_fd.store(-1);
    return status;
  }
  signal->handlers_installed_ = true;
  try {
    signal->watcher_ = std::thread([raw = signal.get()] { raw->watch(); });
  } catch (const std::system_error& e) {
    return Status::io_error(std::string("shutdown signal: watcher thread: ") + e.what());
  }
  return signal;
}

ShutdownSignal::~ShutdownSignal() {
  if (handlers_installed_) {
    ::sigaction(SIGTERM, &g_previous_term, nullptr);
    ::sigaction(SIGINT, &g_previous_int, nullptr);
  }
  if (watcher_.joinable()) {
    unsigned char byte = kStopWatcher;
    while (::write(signal_pipe_[1], &byte, 1) < 0 && errno == EINTR) {
    }
    watcher_.join();
  }
  if (handlers_installed_) g_signal_write_fd.store(-1);
  close_pair(signal_pipe_);
  close_pair(notify_pipe_);
}

void ShutdownSignal::watch() {
  int signals_seen = 0;
  while (true) {
    unsigned char byte = 0;
    ssize_t n = ::read(signal_pipe_[0], &byte, 1);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0 || byte == kStopWatcher) return;
    int signal_number = byte;
    ++signals_seen;
    if (signals_seen == 1) {  // a no-op when request() came first
      trigger(signal_number, std::string("signal ") + strsignal(signal_number));
    } else {
      DICE_LOG(Warn) << "second shutdown signal: exiting now without draining"
                     << kv("signal", strsignal(signal_number));
      std::_Exit(128 + signal_number);
    }
  }
}

void ShutdownSignal::request(const std::string& reason) {
  trigger(0, reason);
}

void ShutdownSignal::trigger(int signal_number, const std::string& reason) {
  std::vector<std::function<void()>> callbacks;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (requested_.load()) return;
    signal_number_.store(signal_number, std::memory_order_release);
    requested_.store(true, std::memory_order_release);
    callbacks.swap(callbacks_);
  }
  DICE_LOG(Info) << "shutdown requested: draining in-flight work" << kv("reason", reason);
  unsigned char byte = 1;
  ssize_t ignored = ::write(notify_pipe_[1], &byte, 1);
  (void)ignored;
  requested_cv_.notify_all();
  for (auto& callback : callbacks) callback();
}

bool ShutdownSignal::wait_for(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mutex_);
  return requested_cv_.wait_for(lock, timeout, [this] { return requested(); });
}

void ShutdownSignal::wait() {
  std::unique_lock<std::mutex> lock(mutex_);
  requested_cv_.wait(lock, [this] { return requested(); });
}

void ShutdownSignal::on_shutdown(std::function<void()> callback) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!requested()) {
      callbacks_.push_back(std::move(callback));
      return;
    }
  }
  callback();
}

}  // namespace dice::service
