// The GPU slots of one reward worker: evaluations take a free one and wait while none is. Slots
// go to the callers in the order they asked, so an evaluation asked for again (a retry,
// evaluation_retry.h) queues behind the evaluations already waiting. Compiles do not hold a slot,
// so a candidate compiles while others run on the GPU.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <list>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "common/cancellation.h"

namespace dice {

// The GPU of a slot: its name up to the '/' ("0/2" -> "0"), what CUDA_VISIBLE_DEVICES gets.
std::string gpu_of_slot(const std::string& slot);

class GpuSlotPool {
 public:
  // `slots`: names as gpu_slot_names() makes them ("0/0", "0/1", "1/0"); empty: no GPU.
  explicit GpuSlotPool(std::vector<std::string> slots);
  GpuSlotPool(const GpuSlotPool&) = delete;
  GpuSlotPool& operator=(const GpuSlotPool&) = delete;

  // A free slot ("" when the pool is empty: evaluate without pinning a GPU), once every caller
  // that asked before and can use a free slot has one; give it back with release().
  // `avoid` non-empty (the slot an evaluation just failed on): another slot, one on another GPU
  // when such a slot is free at the time, when the pool has more than one; with one slot, that
  // slot, after the callers that asked before.
  std::string acquire(const std::string& avoid = "");
  // acquire(), or nothing (and no slot held) once `cancellation` is set (may be null): a
  // candidate whose work item the learner cancelled stops waiting at once, and the callers
  // behind it move up.
  std::optional<std::string> acquire_unless_cancelled(const std::string& avoid,
                                                      Cancellation* cancellation);
  void release(const std::string& slot);

  std::size_t size() const { return size_; }
  // Callers waiting in acquire() now (for tests that order them).
  std::size_t waiting() const;

 private:
  struct Waiter {
    std::string avoid;
    std::string granted;
    bool done = false;
  };
  // Hands free slots to waiters in the order they asked; a waiter that can use none of them
  // does not hold back those behind it.
  void grant_locked();

  const std::size_t size_;
  mutable std::mutex mutex_;
  std::condition_variable granted_;
  std::vector<std::string> free_;
  std::list<Waiter*> queue_;  // in the order of asking
};

// A slot held for one evaluation: released when it goes out of scope. With a `cancellation`,
// the wait for it ends when that is set, and then no slot is held (held() is false).
class SlotLease {
 public:
  SlotLease(GpuSlotPool& pool, const std::string& avoid = "", Cancellation* cancellation = nullptr)
      : pool_(pool), slot_(pool.acquire_unless_cancelled(avoid, cancellation)) {}
  ~SlotLease() {
    if (slot_) pool_.release(*slot_);
  }
  SlotLease(const SlotLease&) = delete;
  SlotLease& operator=(const SlotLease&) = delete;
  bool held() const { return slot_.has_value(); }
  const std::string& slot() const { return *slot_; }  // only when held()

 private:
  GpuSlotPool& pool_;
  std::optional<std::string> slot_;
};

}  // namespace dice
