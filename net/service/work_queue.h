// The work items a worker holds, from the receive loop to the handler threads: queued until a
// handler takes one, running until it is done. Each has its Cancellation, so that a Cancel from
// the learner drops an item still queued and stops one running (the handler sees it through its
// ResultSink). The learner never sends more than the worker's credits, so this holds at most
// `capacity` items.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>

#include "common/cancellation.h"
#include "net/wire/envelope.h"

namespace dice::service {

struct HeldItem {
  std::uint64_t work_id = 0;
  wire::Decoded<schema::Envelope> envelope;
  std::shared_ptr<Cancellation> cancellation;  // never null
};

class WorkQueue {
 public:
  void push(std::uint64_t work_id, wire::Decoded<schema::Envelope> envelope);
  // The next item, now running, or none once closed and empty. done() when it is finished.
  std::optional<HeldItem> pop();
  void done(std::uint64_t work_id);
  void close();

  enum class CancelOutcome {
    kDropped,   // it was queued: removed, never handed to a handler (finish it, unanswered)
    kStopping,  // it runs: its cancellation is set; its handler stops as early as it can
    kNotHeld,   // neither (finished meanwhile): nothing to do
  };
  CancelOutcome cancel(std::uint64_t work_id);

 private:
  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<HeldItem> queued_;
  std::map<std::uint64_t, std::shared_ptr<Cancellation>> running_;
  bool closed_ = false;
};

}  // namespace dice::service
