#include "rewardlog/writer.h"

#include <rocksdb/write_batch.h>

#include <algorithm>
#include <filesystem>
#include <functional>
#include <string_view>
#include <system_error>

#include "common/disk_space.h"
#include "common/log.h"
#include "rewardlog/rocksdb_util.h"

namespace dice::rewardlog {

using Clock = std::chrono::steady_clock;

struct RewardLogWriter::Ack {
  Status status;
};

namespace {

Status check_options(const RewardLogOptions& o) {
  if (o.path.empty()) return Status::invalid_argument("reward log: path is empty");
  if (o.max_batch_records == 0) {
    return Status::invalid_argument("reward log: max_batch_records must be at least 1");
  }
  if (o.max_pending_records == 0) {
    return Status::invalid_argument("reward log: max_pending_records must be at least 1");
  }
  if (o.flush_interval.count() < 0) {
    return Status::invalid_argument("reward log: flush_interval must not be negative");
  }
  if (o.sync == SyncPolicy::kInterval && o.sync_interval.count() <= 0) {
    return Status::invalid_argument(
        "reward log: sync_interval must be positive with sync: interval");
  }
  return Status::ok_status();
}

// Writes the format marker into a new log, or checks the one an existing log has.
Status check_format(DbHandles& db, const std::string& where) {
  std::string format;
  rocksdb::Status s = db.db->Get(rocksdb::ReadOptions(), db.handles[0],
                                 rocksdb::Slice(kFormatKey.data(), kFormatKey.size()), &format);
  if (s.IsNotFound()) {
    rocksdb::WriteOptions sync_write;
    sync_write.sync = true;
    s = db.db->Put(sync_write, db.handles[0], rocksdb::Slice(kFormatKey.data(), kFormatKey.size()),
                   rocksdb::Slice(kFormatVersion.data(), kFormatVersion.size()));
    return from_rocksdb(s, where + ": writing the format marker");
  }
  DICE_RETURN_IF_ERROR(from_rocksdb(s, where + ": reading the format marker"));
  if (format != kFormatVersion) {
    return Status::invalid_argument(where + ": reward log format " + format +
                                    ", this build writes " + std::string(kFormatVersion));
  }
  return Status::ok_status();
}

// RewardLogOptions::min_free_bytes: room for `bytes` more (a batch's keys and values: about what
// its write-ahead log record takes) and the floor, checked before RocksDB sees the batch.
Status check_room(const RewardLogOptions& o, std::uint64_t bytes, const std::string& what) {
  if (o.min_free_bytes == 0) return Status::ok_status();
  FreeSpaceCheck check;
  check.min_free_bytes = o.min_free_bytes;
  check.file_system = o.file_system;
  check.floor_name = o.min_free_name;
  return check_free_disk_space(o.path, bytes, what, check);
}

}  // namespace

Result<std::unique_ptr<RewardLogWriter>> RewardLogWriter::open(const RewardLogOptions& options) {
  DICE_RETURN_IF_ERROR(check_options(options));
  const std::string where = "reward log " + options.path;
  std::error_code ec;
  std::filesystem::create_directories(options.path, ec);
  if (ec) return Status::io_error(where + ": cannot create the directory: " + ec.message());

  rocksdb::DBOptions db_options;
  db_options.create_if_missing = true;
  db_options.create_missing_column_families = true;
  auto db = std::make_unique<DbHandles>();
  DICE_RETURN_IF_ERROR(
      from_rocksdb(rocksdb::DB::Open(db_options, options.path,
                                     column_family_descriptors(rocksdb::ColumnFamilyOptions()),
                                     &db->handles, &db->db),
                   where + ": opening for writing"));
  DICE_RETURN_IF_ERROR(check_format(*db, where));
  return std::unique_ptr<RewardLogWriter>(new RewardLogWriter(options, std::move(db)));
}

RewardLogWriter::RewardLogWriter(RewardLogOptions options, std::unique_ptr<DbHandles> db)
    : options_(std::move(options)), db_(std::move(db)) {
  thread_ = std::thread([this] { run(); });
}

RewardLogWriter::~RewardLogWriter() {
  close().ignore();
}

uint64_t RewardLogWriter::push_locked(std::vector<LogRecord> records, std::shared_ptr<Ack> ack) {
  Pending pending;
  pending.seq = next_seq_++;
  queued_records_ += records.size();
  pending.records = std::move(records);
  pending.ack = std::move(ack);
  pending.queued_at = Clock::now();
  queue_.push_back(std::move(pending));
  work_cv_.notify_one();
  return next_seq_ - 1;
}

Status RewardLogWriter::append(std::vector<LogRecord> records) {
  if (records.empty()) return Status::ok_status();
  std::unique_lock<std::mutex> lock(mu_);
  if (closing_) return Status::aborted("reward log " + options_.path + " is closed");
  auto ack = std::make_shared<Ack>();
  const uint64_t seq = push_locked(std::move(records), ack);
  ++urgent_;
  done_cv_.wait(lock, [&] { return done_seq_ >= seq; });
  --urgent_;
  return ack->status;
}

Status RewardLogWriter::enqueue(std::vector<LogRecord> records) {
  if (records.empty()) return Status::ok_status();
  std::unique_lock<std::mutex> lock(mu_);
  done_cv_.wait(lock, [&] { return closing_ || queued_records_ < options_.max_pending_records; });
  if (closing_) return Status::aborted("reward log " + options_.path + " is closed");
  push_locked(std::move(records), nullptr);
  return Status::ok_status();
}

Status RewardLogWriter::flush() {
  std::unique_lock<std::mutex> lock(mu_);
  if (closed_) return Status::aborted("reward log " + options_.path + " is closed");
  const uint64_t target = next_seq_ - 1;
  ++urgent_;
  work_cv_.notify_one();
  done_cv_.wait(lock, [&] { return done_seq_ >= target; });
  --urgent_;
  Status status = async_error_;
  async_error_ = Status::ok_status();
  return status;
}

Result<std::size_t> RewardLogWriter::erase_run_from(
    const std::string& run_id, uint64_t first_step,
    const std::vector<std::string>& keep_metric_prefixes) {
  DICE_RETURN_IF_ERROR(check_key_text("runId", run_id));
  DICE_RETURN_IF_ERROR(flush());
  const std::string where = "reward log " + options_.path + ": erasing run " + run_id +
                            " from step " + std::to_string(first_step);
  const std::string prefix = run_prefix(run_id);
  rocksdb::WriteBatch batch;
  std::size_t erased = 0;
  std::uint64_t erased_key_bytes = 0;
  // Keys of `family` from `from` while they start with the run's prefix, and `erase` says so.
  auto scan = [&](Family family, const std::string& from,
                  const std::function<bool(std::string_view)>& erase) -> Status {
    std::unique_ptr<rocksdb::Iterator> it(
        db_->db->NewIterator(rocksdb::ReadOptions(), db_->family(family)));
    for (it->Seek(from); it->Valid() && it->key().starts_with(prefix); it->Next()) {
      const std::string_view key(it->key().data(), it->key().size());
      if (!erase(key)) continue;
      DICE_RETURN_IF_ERROR(from_rocksdb(batch.Delete(db_->family(family), it->key()), where));
      ++erased;
      erased_key_bytes += key.size();
    }
    return from_rocksdb(it->status(), where);
  };
  auto always = [](std::string_view) { return true; };
  DICE_RETURN_IF_ERROR(scan(Family::kSteps, step_key(run_id, first_step), always));
  DICE_RETURN_IF_ERROR(
      scan(Family::kCandidates, candidate_step_prefix(run_id, first_step), always));
  DICE_RETURN_IF_ERROR(scan(Family::kMetrics, prefix, [&](std::string_view key) {
    const auto parts = parse_key(Family::kMetrics, key);
    if (!parts || parts->step < first_step) return false;
    for (const std::string& keep : keep_metric_prefixes) {
      if (parts->name.compare(0, keep.size(), keep) == 0) return false;
    }
    return true;
  }));
  if (erased == 0) return erased;
  DICE_RETURN_IF_ERROR(check_room(options_, erased_key_bytes,
                                  "erasing " + std::to_string(erased) + " reward-log records"));
  rocksdb::WriteOptions synced;
  synced.sync = true;
  DICE_RETURN_IF_ERROR(from_rocksdb(db_->db->Write(synced, &batch), where));
  return erased;
}

Status RewardLogWriter::close() {
  {
    std::unique_lock<std::mutex> lock(mu_);
    if (closing_) {
      done_cv_.wait(lock, [&] { return closed_; });
      return close_status_;
    }
    closing_ = true;
    work_cv_.notify_one();
    done_cv_.notify_all();  // wakes enqueue() callers held by back-pressure
  }
  thread_.join();  // the thread writes everything queued before it exits
  std::unique_lock<std::mutex> lock(mu_);
  Status status = async_error_;
  async_error_ = Status::ok_status();
  const Status closed = db_->close("reward log " + options_.path);
  if (status.ok()) status = closed;
  close_status_ = status;
  closed_ = true;
  done_cv_.notify_all();
  return status;
}

Status RewardLogWriter::commit(const std::vector<Pending>& batch) {
  rocksdb::WriteBatch write_batch;
  size_t count = 0;
  std::uint64_t bytes = 0;
  for (const Pending& pending : batch) {
    for (const LogRecord& record : pending.records) {
      const rocksdb::Status s =
          write_batch.Put(db_->family(record.family), record.key, record.value);
      if (!s.ok()) return from_rocksdb(s, "reward log " + options_.path + ": building a batch");
      ++count;
      bytes += record.key.size() + record.value.size();
    }
  }
  // Refused here, the batch fails and the log stays writable: the batches before it stay.
  DICE_RETURN_IF_ERROR(
      check_room(options_, bytes, "a batch of " + std::to_string(count) + " reward-log records"));
  rocksdb::WriteOptions write_options;
  write_options.sync = options_.sync == SyncPolicy::kAlways;
  write_options.disableWAL = false;  // the WAL is what makes an acknowledged batch survive a crash
  return from_rocksdb(
      db_->db->Write(write_options, &write_batch),
      "reward log " + options_.path + ": writing a batch of " + std::to_string(count) + " records");
}

Status RewardLogWriter::sync_wal() {
  return from_rocksdb(db_->db->SyncWAL(), "reward log " + options_.path + ": syncing the WAL");
}

void RewardLogWriter::run() {
  const bool interval = options_.sync == SyncPolicy::kInterval;
  Clock::time_point last_sync = Clock::now();
  bool unsynced = false;  // kInterval: batches written since the last WAL fsync

  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    const Clock::time_point now = Clock::now();
    if (interval && unsynced && now >= last_sync + options_.sync_interval) {
      lock.unlock();
      const Status s = sync_wal();
      lock.lock();
      if (!s.ok()) {
        DICE_LOG(Error) << "reward log WAL sync failed" << kv("error", s.to_string());
        if (async_error_.ok()) async_error_ = s;
      }
      last_sync = Clock::now();
      unsynced = false;
      continue;
    }
    const bool ready = !queue_.empty() &&
                       (closing_ || urgent_ > 0 || queued_records_ >= options_.max_batch_records ||
                        now >= queue_.front().queued_at + options_.flush_interval);
    if (!ready) {
      if (queue_.empty() && closing_) break;
      Clock::time_point deadline = Clock::time_point::max();
      if (!queue_.empty()) deadline = queue_.front().queued_at + options_.flush_interval;
      if (interval && unsynced) deadline = std::min(deadline, last_sync + options_.sync_interval);
      if (deadline == Clock::time_point::max()) {
        work_cv_.wait(lock);
      } else {
        work_cv_.wait_until(lock, deadline);
      }
      continue;
    }

    // Take whole pendings up to max_batch_records (always at least one).
    std::vector<Pending> batch;
    size_t records = 0;
    while (!queue_.empty() && (batch.empty() || records + queue_.front().records.size() <=
                                                    options_.max_batch_records)) {
      records += queue_.front().records.size();
      batch.push_back(std::move(queue_.front()));
      queue_.pop_front();
    }
    queued_records_ -= records;
    done_cv_.notify_all();  // room for enqueue() callers held by back-pressure
    lock.unlock();
    const Status status = commit(batch);
    lock.lock();
    if (status.ok() && interval) unsynced = true;
    for (Pending& pending : batch) {
      if (pending.ack) {
        pending.ack->status = status;
      } else if (!status.ok() && async_error_.ok()) {
        async_error_ = status;
      }
    }
    done_seq_ = batch.back().seq;
    done_cv_.notify_all();
  }
  if (interval && unsynced) {
    lock.unlock();
    const Status s = sync_wal();
    lock.lock();
    if (!s.ok() && async_error_.ok()) async_error_ = s;
  }
}

}  // namespace dice::rewardlog
