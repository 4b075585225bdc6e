#include "common/cancellation.h"

#include <utility>

namespace dice {

Cancellation::Registration::Registration(Registration&& other) noexcept
    : owner_(std::exchange(other.owner_, nullptr)), id_(other.id_) {}

Cancellation::Registration& Cancellation::Registration::operator=(Registration&& other) noexcept {
  if (this != &other) {
    reset();
    owner_ = std::exchange(other.owner_, nullptr);
    id_ = other.id_;
  }
  return *this;
}

Cancellation::Registration::~Registration() {
  reset();
}

void Cancellation::Registration::reset() {
  if (owner_ == nullptr) return;
  std::lock_guard<std::mutex> lock(owner_->mutex_);
  owner_->callbacks_.erase(id_);
  owner_ = nullptr;
}

void Cancellation::cancel() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (cancelled_.exchange(true, std::memory_order_acq_rel)) return;
  for (auto& [id, stop] : callbacks_) stop();
}

Cancellation::Registration Cancellation::on_cancel(std::function<void()> stop) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (cancelled_.load(std::memory_order_acquire)) {
    stop();
    return Registration();
  }
  const std::uint64_t id = next_id_++;
  callbacks_.emplace(id, std::move(stop));
  return Registration(this, id);
}

}  // namespace dice
