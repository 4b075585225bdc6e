#include "tools/dice-dash/log_set.h"

#include <utility>

#include "common/log.h"

namespace dice::dash {

LogSet::LogSet(std::vector<std::string> paths, std::chrono::milliseconds refresh)
    : refresh_(refresh) {
  for (std::string& path : paths) {
    logs_.push_back(Entry{std::move(path), nullptr, Status(), {}, 0});
  }
}

LogView LogSet::view(size_t index) {
  std::lock_guard<std::mutex> lock(mutex_);
  Entry& entry = logs_.at(index);
  const auto now = std::chrono::steady_clock::now();
  if (entry.reader != nullptr && now - entry.caught_up >= refresh_) {
    const Status caught = entry.reader->catch_up();
    if (caught.ok()) {
      entry.caught_up = now;
      entry.failed_catch_ups = 0;
    } else if (++entry.failed_catch_ups < kReopenAfterFailedCatchUps &&
               caught.code() != StatusCode::kNotFound) {  // NotFound: the log was replaced
      DICE_LOG(Debug) << "dice-dash: catch-up failed; serving the older view"
                      << kv("path", entry.path) << kv("error", caught.to_string());
    } else {
      // Not a passing WAL swap: the log was replaced under the reader, or catching up keeps
      // failing (seen once after a writer was SIGKILLed mid-write). A fresh secondary sees the
      // log as it is.
      DICE_LOG(Info) << "dice-dash: catch-up keeps failing; opening the reward log again"
                     << kv("path", entry.path) << kv("failures", entry.failed_catch_ups)
                     << kv("error", caught.to_string());
      entry.reader.reset();
      entry.failed_catch_ups = 0;
    }
  }
  if (entry.reader == nullptr) {
    rewardlog::RewardLogReaderOptions options;
    options.path = entry.path;
    auto opened = rewardlog::RewardLogReader::open(options);
    if (!opened.ok()) {
      if (opened.status().to_string() != entry.status.to_string()) {
        DICE_LOG(Warn) << "dice-dash: cannot open reward log" << kv("path", entry.path)
                       << kv("error", opened.status().to_string());
      }
      entry.status = opened.status();
      return LogView{entry.path, nullptr, entry.status};
    }
    entry.reader = std::move(opened).value();
    entry.status = Status::ok_status();
    entry.caught_up = now;
    DICE_LOG(Info) << "dice-dash: opened reward log" << kv("path", entry.path);
  }
  return LogView{entry.path, entry.reader.get(), Status::ok_status()};
}

}  // namespace dice::dash
