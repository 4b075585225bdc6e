// A request to stop one piece of work, made on another thread: the learner cancelled a work item
// whose answer nobody waits for any more (its group expired or was skipped). The work checks
// cancelled() between its steps; what it cannot check from inside, such as a sandboxed process it
// waits for, it stops through a callback registered for as long as that process runs.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <utility>

namespace dice {

class Cancellation {
 public:
  // Keeps a callback registered until destroyed; the destructor waits for a call in progress, so
  // whatever the callback touches may be destroyed right after it.
  class Registration {
   public:
    Registration() = default;
    Registration(Registration&& other) noexcept;
    Registration& operator=(Registration&& other) noexcept;
    Registration(const Registration&) = delete;
    Registration& operator=(const Registration&) = delete;
    ~Registration();

   private:
    friend class Cancellation;
    Registration(Cancellation* owner, std::uint64_t id) : owner_(owner), id_(id) {}
    void reset();
    Cancellation* owner_ = nullptr;  // null: nothing registered
    std::uint64_t id_ = 0;
  };

  Cancellation() = default;
  Cancellation(const Cancellation&) = delete;
  Cancellation& operator=(const Cancellation&) = delete;

  // Cancels once: the registered callbacks run now, on this thread; later calls do nothing.
  void cancel();
  bool cancelled() const { return cancelled_.load(std::memory_order_acquire); }
  // Calls `stop` when cancel() is called, or now when it was already. A callback must not
  // register or unregister callbacks of the same Cancellation.
  [[nodiscard]] Registration on_cancel(std::function<void()> stop);

 private:
  std::atomic<bool> cancelled_{false};
  std::mutex mutex_;  // held while callbacks run, so a Registration's end waits for its call
  std::map<std::uint64_t, std::function<void()>> callbacks_;
  std::uint64_t next_id_ = 1;
};

// on_cancel() of `cancellation`, or an empty registration where there is none.
inline Cancellation::Registration on_cancel(Cancellation* cancellation,
                                            std::function<void()> stop) {
  return cancellation != nullptr ? cancellation->on_cancel(std::move(stop))
                                 : Cancellation::Registration();
}

}  // namespace dice
