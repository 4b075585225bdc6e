// Options of the reward log writer and reader. YAML keys equal the field names.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "common/status.h"

namespace dice {
class FileSystem;  // common/durable_file.h
}  // namespace dice

namespace dice::rewardlog {

// When a committed batch counts as durable. The write-ahead log is always on; the policy only
// decides when it is fsynced.
enum class SyncPolicy {
  kAlways,    // fsync the WAL before acknowledging each batch: survives power loss.
  kNever,     // never fsync; acknowledged batches are in the OS page cache: they survive the
              // process being killed (SIGKILL, crash), not a power loss or kernel panic.
  kInterval,  // like kNever, plus an fsync of the WAL at least every sync_interval: a power loss
              // loses at most the last sync_interval of acknowledged batches.
};

// "always", "never", "interval".
const char* sync_policy_name(SyncPolicy policy);
// Parses the names above; InvalidArgument naming the text otherwise.
Status parse_sync_policy(std::string_view text, SyncPolicy* policy);

struct RewardLogOptions {
  // Directory of the RocksDB database; created (with its parents) if missing. Default: "" (must
  // be set).
  std::string path;
  // When an acknowledged batch is durable; see SyncPolicy. Default: always.
  SyncPolicy sync = SyncPolicy::kAlways;
  // kInterval only: the longest time between WAL fsyncs while there is unsynced data.
  // Default: 1000 ms.
  std::chrono::milliseconds sync_interval{1000};
  // The batching writer commits at most this many records in one WriteBatch (an append() call
  // is never split, so a larger call makes a larger batch). Default: 512.
  size_t max_batch_records = 512;
  // enqueue()d records wait at most this long for company before their batch is written.
  // append() and flush() never wait for it. Default: 50 ms.
  std::chrono::milliseconds flush_interval{50};
  // enqueue() blocks (back-pressure) while this many records wait to be written. Default: 65536.
  size_t max_pending_records = 65536;
  // Before each batch is written, the log's file system must have room for the batch's keys and
  // values plus these bytes, or the batch is refused, the log unchanged, with an IOError naming
  // the folder, the bytes needed and free (common/disk_space.h; is_disk_space_shortage() is true).
  // RocksDB itself, meeting a full disk midway, stops taking writes until it is reopened; refused
  // first, it never gets there, and its own work (a memtable flush, compactions) keeps room.
  // The learner sets a quarter of run.min_free_disk_mb. Default: 0 (no check)
  std::uint64_t min_free_bytes = 0;
  // What sets min_free_bytes, for the error. Default: "reward log min_free_bytes"
  const char* min_free_name = "reward log min_free_bytes";
  // Where the free-space check's statvfs goes (a test sets what it sees). Default:
  // posix_file_system()
  FileSystem* file_system = nullptr;
};

struct RewardLogReaderOptions {
  // Directory of the reward log to read. Default: "" (must be set).
  std::string path;
  // Where the RocksDB secondary instance keeps its own small files (info log). Default: ""
  // (a fresh temporary directory, removed when the reader closes).
  std::string secondary_path;
};

}  // namespace dice::rewardlog
