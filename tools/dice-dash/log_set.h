// LogSet: the reward logs dice-dash serves, each opened as a RocksDB secondary (never read-write,
// never the writer's lock), so reading never slows the run that writes them.
//
// A log that is missing or damaged at start is not fatal: each request tries to open it again,
// so a dashboard started before its run shows the log as soon as the learner creates it. An open
// log catches up with its writer at most once per `refresh` (TryCatchUpWithPrimary is cheap but
// not free, and a busy page polls often); between catch-ups every request sees the same view.
#pragma once

#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common/status.h"
#include "rewardlog/reader.h"

namespace dice::dash {

// What a request gets for one log: the reader when the log is open (null otherwise) and why not.
struct LogView {
  std::string path;
  rewardlog::RewardLogReader* reader = nullptr;  // owned by the LogSet; valid until its next call
  Status status;  // ok, NotFound (no log there yet), InvalidArgument or Corruption (not readable)
};

class LogSet {
 public:
  // `paths`: reward log folders, in the order the API numbers them (?log=0, 1, ...).
  LogSet(std::vector<std::string> paths, std::chrono::milliseconds refresh);

  size_t size() const { return logs_.size(); }
  // Opens log `index` if it is not open, catches it up if its view is older than `refresh`.
  // A failed catch-up keeps the older view (the writer may be swapping its WAL; the next
  // request tries again); after kReopenAfterFailedCatchUps failures in a row the log is opened
  // again (its files were replaced under the reader), so the view never stays stale for good.
  LogView view(size_t index);

  static constexpr int kReopenAfterFailedCatchUps = 3;

 private:
  struct Entry {
    std::string path;
    std::unique_ptr<rewardlog::RewardLogReader> reader;
    Status status;
    std::chrono::steady_clock::time_point caught_up;
    int failed_catch_ups = 0;  // in a row
  };

  std::chrono::milliseconds refresh_;
  std::mutex mutex_;
  std::vector<Entry> logs_;
};

}  // namespace dice::dash
