#include "net/service/work_queue.h"

#include <algorithm>
#include <utility>

namespace dice::service {

void WorkQueue::push(std::uint64_t work_id, wire::Decoded<schema::Envelope> envelope) {
  std::lock_guard<std::mutex> lock(mutex_);
  queued_.push_back(HeldItem{work_id, std::move(envelope), std::make_shared<Cancellation>()});
  ready_.notify_one();
}

std::optional<HeldItem> WorkQueue::pop() {
  std::unique_lock<std::mutex> lock(mutex_);
  ready_.wait(lock, [&] { return closed_ || !queued_.empty(); });
  if (queued_.empty()) return std::nullopt;
  std::optional<HeldItem> item(std::move(queued_.front()));
  queued_.pop_front();
  running_[item->work_id] = item->cancellation;
  return item;
}

void WorkQueue::done(std::uint64_t work_id) {
  std::lock_guard<std::mutex> lock(mutex_);
  running_.erase(work_id);
}

void WorkQueue::close() {
  std::lock_guard<std::mutex> lock(mutex_);
  closed_ = true;
  ready_.notify_all();
}

WorkQueue::CancelOutcome WorkQueue::cancel(std::uint64_t work_id) {
  std::shared_ptr<Cancellation> running;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto queued = std::find_if(queued_.begin(), queued_.end(),
                               [&](const HeldItem& item) { return item.work_id == work_id; });
    if (queued != queued_.end()) {
      queued_.erase(queued);
      return CancelOutcome::kDropped;
    }
    auto it = running_.find(work_id);
    if (it == running_.end()) return CancelOutcome::kNotHeld;
    running = it->second;
  }
  // Outside the lock: the callbacks kill processes, and a handler ending meanwhile calls done().
  running->cancel();
  return CancelOutcome::kStopping;
}

}  // namespace dice::service
