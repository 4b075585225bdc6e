// Turns at one GPU for the evaluations of its slots. Candidates are checked side by side (any
// number hold a shared turn), but a candidate being timed has the GPU alone (an exclusive turn):
// on the H200, timing while 7 other slots ran moved kernel times up to 15x and the same
// candidates' speedups 0.28-4.1x (p10-p90) between two runs, against 0.78-1.40x with one slot
// (2026-11-30; docs/BENCHMARKS.md, "Timed speedups with 8 slots on one GPU are noise").
//
// Timings go first: once one waits, no new evaluation takes a shared turn until it has run, so a
// stream of new candidates cannot starve it. Every wait is bounded by the caller's patience: a
// turn that does not come (a hung candidate holds its shared turn until its timeout) is reported
// by the caller, and the work goes on without it. Thread-safe.
//
// The turns are a reward worker's own (RewardPipeline keeps one GpuTurns per GPU of its slots):
// other processes on the same GPU (a rollout worker or the learner sharing it, as in
// configs/local.yaml, or a second reward worker) are not held back. Timings that matter want
// the GPU given to one reward worker alone.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>

namespace dice {

class GpuTurns {
 public:
  using Patience = std::chrono::duration<double>;

  // False when no shared turn came within `patience` (nothing is held then). `entry` (if not
  // null) gets the number of this entry and how many shared turns were held beside it.
  struct SharedEntry {
    int others = 0;
    unsigned long long number = 0;
  };
  bool enter_shared(Patience patience, SharedEntry* entry = nullptr);
  void leave_shared();
  // False when the GPU did not come free within `patience` (nothing is held then).
  bool enter_exclusive(Patience patience);
  void leave_exclusive();
  // Timings waiting for the GPU now (for logs and tests).
  int timings_waiting();
  // Shared turns entered so far: an entry numbered above one's own came while it was held.
  unsigned long long shared_entries();

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  int shared_ = 0;
  bool exclusive_ = false;
  int exclusive_waiting_ = 0;
  unsigned long long shared_entries_ = 0;
};

// One evaluation's turn: none, shared or exclusive; left when destroyed. A null GpuTurns gives
// every turn at once (no other evaluation to share with).
class GpuTurn {
 public:
  explicit GpuTurn(GpuTurns* turns) : turns_(turns) {}
  ~GpuTurn() { leave(); }
  GpuTurn(const GpuTurn&) = delete;
  GpuTurn& operator=(const GpuTurn&) = delete;

  bool share(GpuTurns::Patience patience);
  // Leaves a shared turn first (two evaluations that each held one and waited for the GPU alone
  // would wait for each other forever).
  bool take_alone(GpuTurns::Patience patience);
  void leave();
  // Whether another evaluation held a shared turn at this GPU while this one held its own: the
  // only way a neighbour's memory, endless kernel or crash could have reached this evaluation.
  bool had_company();

 private:
  enum class Held { kNone, kShared, kExclusive };
  bool take(Held kind, GpuTurns::Patience patience);  // leaves what is held first, if another kind

  GpuTurns* turns_;
  Held held_ = Held::kNone;
  GpuTurns::SharedEntry shared_entry_;
  bool company_ = false;
};

}  // namespace dice
