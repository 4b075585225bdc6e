#include "reward/compile/compile_limits.h"

#include <algorithm>
#include <fstream>
#include <sstream>
#include <string>

#include "common/seconds_since.h"

namespace dice {

void CompileBudget::start() {
  std::lock_guard<std::mutex> lock(mu_);
  if (!started_) started_ = std::chrono::steady_clock::now();
}

double CompileBudget::seconds_left() const {
  std::lock_guard<std::mutex> lock(mu_);
  return started_ ? seconds_ - seconds_since(*started_) : seconds_;
}

MemoryBudget::Reservation& MemoryBudget::Reservation::operator=(Reservation&& other) noexcept {
  if (this != &other) {
    release();
    budget_ = other.budget_;
    mb_ = other.mb_;
    other.budget_ = nullptr;
    other.mb_ = 0;
  }
  return *this;
}

void MemoryBudget::Reservation::release() {
  if (budget_ != nullptr) budget_->give_back(mb_);
  budget_ = nullptr;
  mb_ = 0;
}

MemoryBudget::MemoryBudget(std::int64_t total_mb, AvailableMemoryReader available)
    : total_mb_(std::max<std::int64_t>(1, total_mb)), available_(std::move(available)) {}

bool MemoryBudget::host_has_room(std::int64_t mb, std::int64_t* available_mb) const {
  *available_mb = -1;
  if (!available_) return true;
  Result<std::int64_t> available = available_();
  if (!available.ok()) return true;
  *available_mb = available.value();
  return *available_mb >= reserved_mb_ + mb;
}

Result<MemoryBudget::Reservation> MemoryBudget::reserve(std::int64_t mb, double timeout_seconds) {
  mb = std::clamp<std::int64_t>(mb, 0, total_mb_);
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                            std::chrono::duration<double>(std::max(0.0, timeout_seconds)));
  std::unique_lock<std::mutex> lock(mu_);
  if (closed_) return Status::aborted("compile memory budget closed");
  const std::uint64_t ticket = next_ticket_++;
  queue_.push_back(ticket);
  // First come first served: a large request is not passed forever by small ones. The host's
  // memory changes without a notification: a request that fits the budget but not the host
  // looks again every kHostMemoryPollSeconds.
  const auto poll = std::chrono::duration_cast<std::chrono::steady_clock::duration>(
      std::chrono::duration<double>(kHostMemoryPollSeconds));
  bool served = false;
  bool host_short = false;  // the last look found the budget with room and the host without
  std::int64_t available_mb = -1;
  while (!closed_) {
    auto wake = deadline;
    if (queue_.front() == ticket && reserved_mb_ + mb <= total_mb_) {
      served = host_has_room(mb, &available_mb);
      host_short = !served;
      if (served) break;
      wake = std::min(deadline, std::chrono::steady_clock::now() + poll);
    }
    if (std::chrono::steady_clock::now() >= deadline) break;
    freed_.wait_until(lock, wake);
  }
  queue_.erase(std::find(queue_.begin(), queue_.end(), ticket));
  if (!served || closed_) {
    freed_.notify_all();  // the next in line may fit now that this one left the queue
    if (closed_) return Status::aborted("compile memory budget closed");
    const std::string held =
        std::to_string(reserved_mb_) + " of " + std::to_string(total_mb_) + " MiB held";
    const std::string wait = "no " + std::to_string(mb) + " MiB of compile memory free within " +
                             std::to_string(static_cast<int>(timeout_seconds)) + " s (";
    if (host_short) {
      return Status::timeout(wait + "the host has " + std::to_string(available_mb) +
                             " MiB available, short of the " + held + " and this build's)");
    }
    return Status::timeout(wait + held + ")");
  }
  reserved_mb_ += mb;
  freed_.notify_all();  // the next in line may fit beside this one
  return Reservation(this, mb);
}

void MemoryBudget::give_back(std::int64_t mb) {
  std::lock_guard<std::mutex> lock(mu_);
  reserved_mb_ -= mb;
  freed_.notify_all();
}

void MemoryBudget::close() {
  std::lock_guard<std::mutex> lock(mu_);
  closed_ = true;
  freed_.notify_all();
}

std::int64_t MemoryBudget::reserved_mb() const {
  std::lock_guard<std::mutex> lock(mu_);
  return reserved_mb_;
}

size_t MemoryBudget::waiting() const {
  std::lock_guard<std::mutex> lock(mu_);
  return queue_.size();
}

namespace {

// The MiB of one "Name:   123 kB" line of /proc/meminfo.
Result<std::int64_t> meminfo_mb(const std::string& name) {
  std::ifstream in("/proc/meminfo");
  std::string line;
  const std::string key = name + ":";
  while (std::getline(in, line)) {
    if (line.rfind(key, 0) != 0) continue;
    std::istringstream fields(line.substr(key.size()));
    std::int64_t kib = 0;
    if (fields >> kib && kib >= 0) return kib / 1024;
    break;
  }
  return Status::io_error("/proc/meminfo: no " + name + " line");
}

}  // namespace

Result<std::int64_t> host_memory_mb() {
  DICE_ASSIGN_OR_RETURN(const std::int64_t mb, meminfo_mb("MemTotal"));
  if (mb <= 0) return Status::io_error("/proc/meminfo: MemTotal is 0");
  return mb;
}

Result<std::int64_t> host_available_memory_mb() {
  return meminfo_mb("MemAvailable");
}

std::int64_t default_compile_memory_mb() {
  Result<std::int64_t> host = host_memory_mb();
  return host.ok() ? host.value() * 3 / 4 : std::int64_t{16384};
}

}  // namespace dice
