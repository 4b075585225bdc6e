#include "reward/evaluate/gpu_turns.h"

namespace dice {

bool GpuTurns::enter_shared(Patience patience) {
  std::unique_lock<std::mutex> lock(mutex_);
  if (!changed_.wait_for(lock, patience, [&] { return !exclusive_ && exclusive_waiting_ == 0; })) {
    return false;
  }
  ++shared_;
  return true;
}

void GpuTurns::leave_shared() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    --shared_;
  }
  changed_.notify_all();
}

bool GpuTurns::enter_exclusive(Patience patience) {
  std::unique_lock<std::mutex> lock(mutex_);
  ++exclusive_waiting_;
  const bool free = changed_.wait_for(lock, patience, [&] { return !exclusive_ && shared_ == 0; });
  --exclusive_waiting_;
  if (free) exclusive_ = true;
  lock.unlock();
  // A timing that gave up may have been all that held new shared turns back.
  if (!free) changed_.notify_all();
  return free;
}

void GpuTurns::leave_exclusive() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    exclusive_ = false;
  }
  changed_.notify_all();
}

int GpuTurns::timings_waiting() {
  std::lock_guard<std::mutex> lock(mutex_);
  return exclusive_waiting_;
}

bool GpuTurn::share(GpuTurns::Patience patience) {
  return take(Held::kShared, patience);
}

bool GpuTurn::take_alone(GpuTurns::Patience patience) {
  return take(Held::kExclusive, patience);
}

bool GpuTurn::take(Held kind, GpuTurns::Patience patience) {
  leave();
  if (turns_ == nullptr) return true;
  const bool got =
      kind == Held::kShared ? turns_->enter_shared(patience) : turns_->enter_exclusive(patience);
  if (got) held_ = kind;
  return got;
}

void GpuTurn::leave() {
  if (held_ == Held::kShared) turns_->leave_shared();
  if (held_ == Held::kExclusive) turns_->leave_exclusive();
  held_ = Held::kNone;
}

}  // namespace dice
