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
// Memory: a build reserves what builds are measured to use (CompileOptions::build_memory_mb: the
// peak resident memory of a whole build, its nvcc, nvcc's stages and the host compiler together,
// with a margin; docs/BENCHMARKS.md) from the worker's MemoryBudget and holds it until it ends.
// It starts only when both hold:
//   - the budget: the reservations held, its own included, fit in MemoryBudget::total_mb();
//   - the host: MemAvailable (/proc/meminfo) covers every reservation held and its own, as if
//     none of the running builds had touched its memory yet (one admitted a moment ago has not),
//     so builds never start into memory that evaluations, other workers or running builds took.
// Builds that cannot start wait, first come first served, looking at the host again every
// kHostMemoryPollSeconds. The reservation is an estimate, not a limit. What bounds a build is
// each compiler process's address-space limit (CompileOptions::memory_limit_mb, RLIMIT_AS; with
// the sandbox's cgroups, memory.max of each compiler's whole process tree): a build that goes
// past its reservation (a template bomb) holds about 2 x memory_limit_mb at most (nvcc runs its
// stages one after another, each under the limit), its compiler fails at the limit as the
// candidate's RESOURCE_LIMIT, and meanwhile the host check keeps further builds from starting.
// It does not stop builds already running: jobs x 2 x memory_limit_mb is the worst case of
// builds that all go to their limits at once, where the old reservation of 2 x memory_limit_mb
// per build kept that within the budget at the cost of concurrency (6 of 16 jobs on a 128 GiB
// node).
#pragma once

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
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

// The host's physical memory in MiB (MemTotal of /proc/meminfo), or an error naming the file.
Result<std::int64_t> host_memory_mb();

// MiB the host can give new work without swapping (MemAvailable of /proc/meminfo: free memory
// and the caches it can drop), or an error naming the file.
Result<std::int64_t> host_available_memory_mb();

// What one build is measured to hold at its peak, MiB, with a margin (CompileOptions::
// build_memory_mb's default). The summed resident memory of a build's processes on the dev VM's
// dev items (docs/BENCHMARKS.md, "Compile memory builds really use"): split builds ~550 MB, lean
// ~1.35 GB, full headers up to 2.97 GB; the full tier's nvcc (2.54 GB) and g++ (1.25 GB) peaking
// at the same moment would be 3.8 GB. Sized for the full tier, the heaviest a build reaches.
inline constexpr std::int64_t kBuildMemoryMb = 4096;

// What one build reserves: its estimate, and no more than its two compilers' address-space limits
// (a build never holds more).
inline std::int64_t build_reservation_mb(std::int64_t build_memory_mb,
                                         std::int64_t memory_limit_mb) {
  return std::min(build_memory_mb, 2 * memory_limit_mb);
}

// How often a request that fits the budget but not the host looks at the host again, seconds.
inline constexpr double kHostMemoryPollSeconds = 0.25;

// MiB the host has for new work (MemAvailable), or an error; a test double stands in for
// host_available_memory_mb().
using AvailableMemoryReader = std::function<Result<std::int64_t>()>;

// MiB that concurrent compiles may hold at once, handed out first come first served, and only
// while the host has them (see "Memory" above).
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

  // `available` reads what the host has free; where it fails (or is empty), only the budget
  // counts.
  explicit MemoryBudget(std::int64_t total_mb,
                        AvailableMemoryReader available = host_available_memory_mb);
  MemoryBudget(const MemoryBudget&) = delete;
  MemoryBudget& operator=(const MemoryBudget&) = delete;

  // Waits until `mb` MiB are free in the budget and on the host (see "Memory" above) and every
  // earlier request has been served, for at most `timeout_seconds`. A request above the total
  // gets the whole budget (it runs alone). kTimeout when the wait passes its limit (naming the
  // budget or the host), kAborted after close().
  Result<Reservation> reserve(std::int64_t mb, double timeout_seconds);
  // Wakes every waiter with kAborted; later requests fail at once.
  void close();

  std::int64_t total_mb() const { return total_mb_; }
  std::int64_t reserved_mb() const;
  size_t waiting() const;

 private:
  void give_back(std::int64_t mb);
  // Whether the host's available memory covers the held reservations and `mb` more; the reading
  // goes to *available_mb (-1 where it failed: then only the budget counts).
  bool host_has_room(std::int64_t mb, std::int64_t* available_mb) const;

  const std::int64_t total_mb_;
  const AvailableMemoryReader available_;
  mutable std::mutex mu_;
  std::condition_variable freed_;
  std::int64_t reserved_mb_ = 0;
  std::deque<std::uint64_t> queue_;  // tickets of the waiting requests, oldest first
  std::uint64_t next_ticket_ = 0;
  bool closed_ = false;
};

// CompileOptions::memory_budget_mb's default: three quarters of the host's memory, the rest for
// the evaluations, the worker and the rest of the host; a fixed 16 GiB where the host's cannot be
// read.
std::int64_t default_compile_memory_mb();

}  // namespace dice
