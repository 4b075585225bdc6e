// RewardLogWriter: the one process that appends to a reward log.
//
// Writes are batched: records from any number of threads queue up and a single writer thread
// commits them as RocksDB WriteBatches (write-ahead log always on), at most
// options.max_batch_records per batch. Each append() call lands in one batch, so it is atomic:
// after a crash either all of its records are in the log or none.
//
// Acknowledgement: a record is acknowledged when
//   - append() returned ok for it, or
//   - it was passed to enqueue() and a later flush() (or close()) returned ok.
// An acknowledged record is durable per options.sync: with kAlways it survives power loss; with
// kNever and kInterval it survives the writer process being killed at any instant (SIGKILL),
// with kInterval a power loss loses at most the last sync_interval.
//
// Errors come back as Status (no exceptions). A failed batch fails every append() in it; failed
// enqueue()d records are reported by the next flush().
//
// A full disk: with options.min_free_bytes set, each batch is checked against the free space
// before RocksDB sees it; one that would not fit is refused (an IOError naming the folder, the
// bytes needed and free), the batches acknowledged before it stay, and the log takes writes
// again once there is room. The learner ends the run on it (exit 3, kExitNoDiskSpace).
#pragma once

#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/status.h"
#include "rewardlog/options.h"
#include "rewardlog/record_codec.h"

namespace dice::rewardlog {

struct DbHandles;

class RewardLogWriter {
 public:
  // Opens (creating if missing) the log at options.path. Unavailable if another process has it
  // open for writing; InvalidArgument for bad options or a log of another format version.
  static Result<std::unique_ptr<RewardLogWriter>> open(const RewardLogOptions& options);

  ~RewardLogWriter();  // close(), ignoring its status
  RewardLogWriter(const RewardLogWriter&) = delete;
  RewardLogWriter& operator=(const RewardLogWriter&) = delete;

  // Writes `records` as (part of) one batch and returns once that batch is durable per the sync
  // policy. Thread-safe; concurrent callers share batches (group commit).
  Status append(std::vector<LogRecord> records);
  // Convenience: encodes one schema record and appends it.
  template <typename Reader>
  Status append_record(Reader record) {
    DICE_ASSIGN_OR_RETURN(LogRecord encoded, encode_record(record));
    std::vector<LogRecord> records;
    records.push_back(std::move(encoded));
    return append(std::move(records));
  }

  // Queues `records` (one batch, as for append()) and returns without waiting for the write;
  // blocks only while max_pending_records are already queued. Not acknowledged until flush().
  Status enqueue(std::vector<LogRecord> records);
  // Returns once everything enqueued before the call is durable per the sync policy; the first
  // error of any enqueued batch since the last flush() otherwise.
  Status flush();

  // Erases what run `run_id` logged from step `first_step` on: its StepRecords, CandidateRecords
  // and MetricRecords of those steps, except metrics whose name starts with one of
  // `keep_metric_prefixes` (series not counted in run steps, such as "sft/"). One synced batch,
  // after a flush(). What a resumed run does before its steps from `first_step` run again, so each
  // is in the log once. Returns how many records were erased.
  Result<std::size_t> erase_run_from(const std::string& run_id, uint64_t first_step,
                                     const std::vector<std::string>& keep_metric_prefixes = {});

  // Writes everything queued, stops the writer thread and closes the database; returns what
  // flush() would, or the close error. Calling it again returns the same status; append(),
  // enqueue() and flush() after close() return Aborted.
  Status close();

  const RewardLogOptions& options() const { return options_; }

 private:
  struct Ack;
  struct Pending {
    std::vector<LogRecord> records;
    uint64_t seq = 0;
    std::shared_ptr<Ack> ack;  // set for append(); null for enqueue()
    std::chrono::steady_clock::time_point queued_at;
  };

  RewardLogWriter(RewardLogOptions options, std::unique_ptr<DbHandles> db);
  uint64_t push_locked(std::vector<LogRecord> records, std::shared_ptr<Ack> ack);
  void run();
  Status commit(const std::vector<Pending>& batch);
  Status sync_wal();

  const RewardLogOptions options_;
  std::unique_ptr<DbHandles> db_;

  std::mutex mu_;
  std::condition_variable work_cv_;  // writer thread waits here
  std::condition_variable done_cv_;  // callers wait here
  std::deque<Pending> queue_;
  size_t queued_records_ = 0;
  uint64_t next_seq_ = 1;
  uint64_t done_seq_ = 0;  // every pending with seq <= done_seq_ is written (or failed)
  int urgent_ = 0;         // append()/flush() callers waiting: write without delay
  Status async_error_;     // first failure of an enqueue()d batch since the last flush()
  bool closing_ = false;   // close() started: no new records
  bool closed_ = false;    // close() finished; close_status_ is its result
  Status close_status_;
  std::thread thread_;
};

}  // namespace dice::rewardlog
