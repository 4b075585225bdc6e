#include "reward/gpu_slot_pool.h"

namespace dice {
namespace {

// The free slot a caller avoiding `avoid` may take, as an index into `free` (free.size(): none).
// Without anything to avoid, the last one freed; else another slot, one on another GPU first.
std::size_t pick(const std::vector<std::string>& free, const std::string& avoid,
                 std::size_t pool_size) {
  if (free.empty()) return free.size();
  if (avoid.empty() || pool_size < 2) return free.size() - 1;
  std::size_t same_gpu = free.size();
  for (std::size_t i = free.size(); i-- > 0;) {
    if (free[i] == avoid) continue;
    if (gpu_of_slot(free[i]) != gpu_of_slot(avoid)) return i;
    if (same_gpu == free.size()) same_gpu = i;
  }
  return same_gpu;
}

}  // namespace

std::string gpu_of_slot(const std::string& slot) {
  return slot.substr(0, slot.find('/'));
}

GpuSlotPool::GpuSlotPool(std::vector<std::string> slots)
    : size_(slots.size()), free_(std::move(slots)) {}

std::string GpuSlotPool::acquire(const std::string& avoid) {
  return *acquire_unless_cancelled(avoid, nullptr);
}

std::optional<std::string> GpuSlotPool::acquire_unless_cancelled(const std::string& avoid,
                                                                 Cancellation* cancellation) {
  if (size_ == 0) return std::string();
  Waiter me{avoid, "", false};
  bool cancelled = false;  // guarded by mutex_
  // Registered before the lock is taken (a cancel made already runs the callback at once), and
  // ended after it is released (the lock is declared after it).
  const Cancellation::Registration registration = on_cancel(cancellation, [&] {
    std::lock_guard<std::mutex> lock(mutex_);
    cancelled = true;
    granted_.notify_all();
  });
  std::unique_lock<std::mutex> lock(mutex_);
  if (cancelled) return std::nullopt;
  queue_.push_back(&me);
  grant_locked();
  granted_.wait(lock, [&] { return me.done || cancelled; });
  if (me.done) return me.granted;  // granted as the cancel came: the caller gives it back
  queue_.remove(&me);
  grant_locked();  // a slot it could not use may suit the callers behind it now
  return std::nullopt;
}

void GpuSlotPool::release(const std::string& slot) {
  if (size_ == 0) return;
  std::lock_guard<std::mutex> lock(mutex_);
  free_.push_back(slot);
  grant_locked();
}

std::size_t GpuSlotPool::waiting() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return queue_.size();
}

void GpuSlotPool::grant_locked() {
  bool any = false;
  for (auto it = queue_.begin(); it != queue_.end() && !free_.empty();) {
    Waiter* waiter = *it;
    const std::size_t i = pick(free_, waiter->avoid, size_);
    if (i == free_.size()) {
      ++it;
      continue;
    }
    waiter->granted = std::move(free_[i]);
    free_.erase(free_.begin() + static_cast<std::ptrdiff_t>(i));
    waiter->done = true;
    it = queue_.erase(it);
    any = true;
  }
  if (any) granted_.notify_all();
}

}  // namespace dice
