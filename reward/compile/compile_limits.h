// Limits on compiling candidates (reward/compile/compile.h), so that no source, however
// pathological (a template bomb, an #include of something huge or endless), costs more than a known
// amount.
//
// Time: one candidate has one wall-clock budget (CompileBudget) for everything it compiles: every
// module (load_inline call), every header tier a build tries, and the link. Its clock starts when
// the first of its builds starts, after the build has its memory (that wait is reported in
// CompileOutcome::memory_wait_seconds, not charged: it is the other candidates' doing; a later
// module's wait, queue included, is on the running clock); each compiler process runs with what
// is left as its timeout, and a tier that ran out of time, or of memory, is never tried again
// with another.
//
// Memory: each compiler process runs under an address-space limit (CompileOptions::
// memory_limit_mb), and a build runs two at once (nvcc and the host compiler). Before it starts, a
// build reserves both limits from the worker's MemoryBudget and holds them until it ends, so the
// worker's compilers together stay within the budget even when every one of them grows to its
// limit; builds that do not fit wait, first come first served.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <optional>

#include "common/status.h"

namespace dice {

// One candidate's compile budget, shared by its builds.
class CompileBudget {
 public:
  explicit CompileBudget(double seconds) : seconds_(seconds) {}

  // Starts the clock unless it runs already (a later build of the same candidate).
  void start();
  // Seconds left: the whole budget before start(), <= 0 once spent.
  double seconds_left() const;
  double seconds() const { return seconds_; }

 private:
  const double seconds_;
  mutable std::mutex mu_;
  std::optional<std::chrono::steady_clock::time_point> started_;
};

// MiB that concurrent compiles may hold at once, handed out first come first served.
class MemoryBudget {
 public:
  // A held amount; given back when destroyed.
  class Reservation {
   public:
    Reservation() = default;
    Reservation(Reservation&& other) noexcept { *this = std::move(other); }
    Reservation& operator=(Reservation&& other) noexcept;
    ~Reservation() { release(); }
    std::int64_t mb() const { return mb_; }
    void release();

   private:
    friend class MemoryBudget;
    Reservation(MemoryBudget* budget, std::int64_t mb) : budget_(budget), mb_(mb) {}
    MemoryBudget* budget_ = nullptr;
    std::int64_t mb_ = 0;
  };

  explicit MemoryBudget(std::int64_t total_mb);
  MemoryBudget(const MemoryBudget&) = delete;
  MemoryBudget& operator=(const MemoryBudget&) = delete;

  // Waits until `mb` MiB are free and every earlier request has been served, for at most
  // `timeout_seconds`. A request above the total gets the whole budget (it runs alone).
  // kTimeout when the wait passes its limit, kAborted after close().
  Result<Reservation> reserve(std::int64_t mb, double timeout_seconds);
  // Wakes every waiter with kAborted; later requests fail at once.
  void close();

  std::int64_t total_mb() const { return total_mb_; }
  std::int64_t reserved_mb() const;
  size_t waiting() const;

 private:
  void give_back(std::int64_t mb);

  const std::int64_t total_mb_;
  mutable std::mutex mu_;
  std::condition_variable freed_;
  std::int64_t reserved_mb_ = 0;
  std::deque<std::uint64_t> queue_;  // tickets of the waiting requests, oldest first
  std::uint64_t next_ticket_ = 0;
  bool closed_ = false;
};

// The host's physical memory in MiB (MemTotal of /proc/meminfo), or an error naming the file.
Result<std::int64_t> host_memory_mb();

// CompileOptions::memory_budget_mb's default: three quarters of the host's memory, the rest for
// the evaluations, the worker and the rest of the host; a fixed 16 GiB where the host's cannot be
// read.
std::int64_t default_compile_memory_mb();

}  // namespace dice
