#include "reward/evaluate/gpu_turns.h"

namespace dice {

bool GpuTurns::enter_shared(Patience patience, SharedEntry* entry) {
  std::unique_lock<std::mutex> lock(mutex_);
  if (!changed_.wait_for(lock, patience, [&] { return !exclusive_ && exclusive_waiting_ == 0; })) {
    return false;
  }
  if (entry != nullptr) *entry = {shared_, shared_entries_ + 1};
  ++shared_;
  ++shared_entries_;
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

unsigned long long GpuTurns::shared_entries() {
  std::lock_guard<std::mutex> lock(mutex_);
  return shared_entries_;
}

bool GpuTurn::share(GpuTurns::Patience patience) {
  return take(Held::kShared, patience);
}

bool GpuTurn::take_alone(GpuTurns::Patience patience) {
  return take(Held::kExclusive, patience);
}

bool GpuTurn::take(Held kind, GpuTurns::Patience patience) {
  // Held already: leaving first would let another evaluation in between.
  if (held_ == kind && kind != Held::kNone) return true;
  leave();
  if (turns_ == nullptr) return true;
  const bool got = kind == Held::kShared ? turns_->enter_shared(patience, &shared_entry_)
                                         : turns_->enter_exclusive(patience);
  if (got) held_ = kind;
  return got;
}

bool GpuTurn::had_company() {
  if (held_ == Held::kShared && !company_) {
    company_ = shared_entry_.others > 0 || turns_->shared_entries() > shared_entry_.number;
  }
  return company_;
}

void GpuTurn::leave() {
  if (held_ == Held::kShared) {
    (void)had_company();  // its last moment with company
    turns_->leave_shared();
  }
  if (held_ == Held::kExclusive) turns_->leave_exclusive();
  held_ = Held::kNone;
}

}  // namespace dice
