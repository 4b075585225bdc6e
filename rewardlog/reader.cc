#include "rewardlog/reader.h"

#include <rocksdb/iterator.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <system_error>

#include "common/read_file.h"
#include "common/remove_tree.h"
#include "rewardlog/rocksdb_util.h"

namespace dice::rewardlog {
namespace {

namespace fs = std::filesystem;

Result<std::string> make_temp_dir() {
  std::string pattern = (fs::temp_directory_path() / "dice-rewardlog-reader-XXXXXX").string();
  if (mkdtemp(pattern.data()) == nullptr) {
    return Status::io_error("cannot create a temporary directory for the reward log reader");
  }
  return pattern;
}

bool starts_with(std::string_view text, std::string_view prefix) {
  return text.size() >= prefix.size() && text.compare(0, prefix.size(), prefix) == 0;
}

}  // namespace

Result<std::unique_ptr<RewardLogReader>> RewardLogReader::open(
    const RewardLogReaderOptions& options) {
  if (options.path.empty()) return Status::invalid_argument("reward log reader: path is empty");
  const std::string where = "reward log " + options.path;
  std::error_code ec;
  if (!fs::exists(options.path, ec)) return Status::not_found(where + ": no such directory");
  if (!fs::exists(fs::path(options.path) / "CURRENT", ec)) {
    return Status::invalid_argument(where + ": not a RocksDB database (no CURRENT file)");
  }

  rocksdb::DBOptions db_options;
  db_options.max_open_files = -1;  // required of a secondary instance
  std::vector<std::string> existing;
  DICE_RETURN_IF_ERROR(
      from_rocksdb(rocksdb::DB::ListColumnFamilies(db_options, options.path, &existing), where));
  for (Family f : kAllFamilies) {
    if (is_optional_family(f)) continue;
    if (std::find(existing.begin(), existing.end(), family_name(f)) == existing.end()) {
      return Status::invalid_argument(where + ": not a dice reward log (no column family \"" +
                                      family_name(f) + "\")");
    }
  }

  std::string secondary_path = options.secondary_path;
  const bool owns_secondary_path = secondary_path.empty();
  if (owns_secondary_path) {
    DICE_ASSIGN_OR_RETURN(secondary_path, make_temp_dir());
  }
  auto db = std::make_unique<DbHandles>();
  Status opened =
      from_rocksdb(rocksdb::DB::OpenAsSecondary(
                       db_options, options.path, secondary_path,
                       column_family_descriptors(rocksdb::ColumnFamilyOptions(), &existing),
                       &db->handles, &db->db),
                   where + ": opening as a secondary");
  if (opened.ok()) {
    opened = from_rocksdb(db->db->TryCatchUpWithPrimary(), where + ": catching up");
  }
  if (opened.ok()) {
    std::string format;
    const rocksdb::Status s =
        db->db->Get(rocksdb::ReadOptions(), db->handles[0],
                    rocksdb::Slice(kFormatKey.data(), kFormatKey.size()), &format);
    if (s.ok() && format != kFormatVersion) {
      opened = Status::invalid_argument(where + ": reward log format " + format +
                                        ", this build reads " + std::string(kFormatVersion));
    } else if (!s.ok() && !s.IsNotFound()) {
      opened = from_rocksdb(s, where + ": reading the format marker");
    }
  }
  if (!opened.ok()) {
    db->close(where).ignore();
    if (owns_secondary_path) remove_tree(secondary_path).ignore();
    return opened;
  }
  return std::unique_ptr<RewardLogReader>(
      new RewardLogReader(options.path, secondary_path, owns_secondary_path, std::move(db)));
}

namespace {

// The text of the database's IDENTITY file (RocksDB writes one per database), "" when none.
std::string read_identity(const std::string& path) {
  Result<std::string> read = read_file(path + "/IDENTITY");
  std::string text = read.ok() ? std::move(*read) : std::string();
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
  return text;
}

}  // namespace

RewardLogReader::RewardLogReader(std::string path, std::string secondary_path,
                                 bool owns_secondary_path, std::unique_ptr<DbHandles> db)
    : path_(std::move(path)),
      secondary_path_(std::move(secondary_path)),
      owns_secondary_path_(owns_secondary_path),
      identity_(read_identity(path_)),
      db_(std::move(db)) {}

RewardLogReader::~RewardLogReader() {
  db_->close("reward log " + path_).ignore();
  // remove_tree, not std::filesystem::remove_all: the learner reads its log in a process that
  // loads libtorch.so, whose copy of remove_all crashes (common/remove_tree.h).
  if (owns_secondary_path_) remove_tree(secondary_path_).ignore();
}

Status RewardLogReader::catch_up() {
  // RocksDB documents that catching up can fail while the writer replaces the WAL or MANIFEST
  // file being read; another attempt reads the new files.
  constexpr int kAttempts = 3;
  rocksdb::Status status;
  for (int attempt = 0; attempt < kAttempts; ++attempt) {
    status = db_->db->TryCatchUpWithPrimary();
    if (status.ok()) break;
  }
  DICE_RETURN_IF_ERROR(from_rocksdb(status, "reward log " + path_ + ": catching up"));
  // A secondary keeps reading the files it opened, so a log deleted and written anew at the same
  // path would look unchanged for ever; the database's identity file tells them apart.
  if (read_identity(path_) != identity_) {
    return Status(StatusCode::kNotFound,
                  "reward log " + path_ +
                      ": replaced since it was opened (another database at this path, or none); "
                      "open it again");
  }
  return Status::ok_status();
}

template <typename T>
Status RewardLogReader::scan(const std::string& prefix,
                             const std::function<bool(std::string_view)>& want,
                             const Visitor<T>& visit) {
  const Family family = FamilyOf<T>::kFamily;
  rocksdb::ColumnFamilyHandle* handle = db_->family(family);
  if (handle == nullptr) return Status::ok_status();  // a log older than the family: none
  std::unique_ptr<rocksdb::Iterator> it(db_->db->NewIterator(rocksdb::ReadOptions(), handle));
  for (it->Seek(prefix); it->Valid(); it->Next()) {
    const std::string_view key(it->key().data(), it->key().size());
    if (!starts_with(key, prefix)) break;
    if (want && !want(key)) continue;
    Result<OwnedRecord<T>> record =
        decode_record<T>(key, std::string_view(it->value().data(), it->value().size()));
    if (!record.ok()) return record.status().with_context("reward log " + path_);
    DICE_RETURN_IF_ERROR(visit(std::move(record).value()));
  }
  return from_rocksdb(it->status(), "reward log " + path_ + ": reading " + family_name(family));
}

template <typename T>
Result<std::vector<OwnedRecord<T>>> RewardLogReader::collect(const std::string& prefix) {
  std::vector<OwnedRecord<T>> out;
  DICE_RETURN_IF_ERROR(scan<T>(prefix, nullptr, [&](OwnedRecord<T> record) {
    out.push_back(std::move(record));
    return Status::ok_status();
  }));
  return out;
}

template <typename T>
Result<OwnedRecord<T>> RewardLogReader::get(const std::string& key) {
  const Family family = FamilyOf<T>::kFamily;
  rocksdb::ColumnFamilyHandle* handle = db_->family(family);
  if (handle == nullptr) {
    return Status::not_found("reward log " + path_ + ": no " + describe_key(family, key) +
                             " (the log predates the " + family_name(family) + " family)");
  }
  rocksdb::PinnableSlice value;
  const rocksdb::Status s = db_->db->Get(rocksdb::ReadOptions(), handle, key, &value);
  if (s.IsNotFound()) {
    return Status::not_found("reward log " + path_ + ": no " + describe_key(family, key));
  }
  DICE_RETURN_IF_ERROR(
      from_rocksdb(s, "reward log " + path_ + ": reading " + describe_key(family, key)));
  Result<OwnedRecord<T>> record =
      decode_record<T>(key, std::string_view(value.data(), value.size()));
  if (!record.ok()) return record.status().with_context("reward log " + path_);
  return record;
}

Result<std::vector<OwnedRecord<schema::RunRecord>>> RewardLogReader::runs() {
  return collect<schema::RunRecord>("");
}

Result<OwnedRecord<schema::RunRecord>> RewardLogReader::run(std::string_view run_id) {
  DICE_RETURN_IF_ERROR(check_key_text("run id", run_id));
  return get<schema::RunRecord>(run_key(run_id));
}

Result<std::vector<OwnedRecord<schema::StepRecord>>> RewardLogReader::steps(
    std::string_view run_id) {
  DICE_RETURN_IF_ERROR(check_key_text("run id", run_id));
  return collect<schema::StepRecord>(run_prefix(run_id));
}

Status RewardLogReader::for_each_candidate(std::string_view run_id, const CandidateFilter& filter,
                                           const Visitor<schema::CandidateRecord>& visit) {
  DICE_RETURN_IF_ERROR(check_key_text("run id", run_id));
  if (filter.task_id) DICE_RETURN_IF_ERROR(check_key_text("task id", *filter.task_id));
  if (filter.step && filter.task_id) {
    return scan<schema::CandidateRecord>(
        candidate_task_prefix(run_id, *filter.step, *filter.task_id), nullptr, visit);
  }
  if (filter.step) {
    return scan<schema::CandidateRecord>(candidate_step_prefix(run_id, *filter.step), nullptr,
                                         visit);
  }
  std::function<bool(std::string_view)> want;
  if (filter.task_id) {
    // Undecodable keys are kept so that decoding reports them.
    want = [&](std::string_view key) {
      const std::optional<KeyParts> parts = parse_key(Family::kCandidates, key);
      return !parts || parts->task_id == *filter.task_id;
    };
  }
  return scan<schema::CandidateRecord>(run_prefix(run_id), want, visit);
}

Result<std::vector<OwnedRecord<schema::CandidateRecord>>> RewardLogReader::candidates(
    std::string_view run_id, const CandidateFilter& filter) {
  std::vector<OwnedRecord<schema::CandidateRecord>> out;
  DICE_RETURN_IF_ERROR(
      for_each_candidate(run_id, filter, [&](OwnedRecord<schema::CandidateRecord> record) {
        out.push_back(std::move(record));
        return Status::ok_status();
      }));
  return out;
}

Result<OwnedRecord<schema::KernelRecord>> RewardLogReader::kernel(std::string_view source_hash) {
  DICE_RETURN_IF_ERROR(check_source_hash(source_hash));
  return get<schema::KernelRecord>(kernel_key(source_hash));
}

Result<std::vector<OwnedRecord<schema::TaskRecord>>> RewardLogReader::tasks(
    std::string_view run_id) {
  DICE_RETURN_IF_ERROR(check_key_text("run id", run_id));
  return collect<schema::TaskRecord>(run_prefix(run_id));
}

Result<OwnedRecord<schema::TaskRecord>> RewardLogReader::task(std::string_view run_id,
                                                              std::string_view task_id) {
  DICE_RETURN_IF_ERROR(check_key_text("run id", run_id));
  DICE_RETURN_IF_ERROR(check_key_text("task id", task_id));
  return get<schema::TaskRecord>(task_key(run_id, task_id));
}

Result<std::vector<OwnedRecord<schema::MetricRecord>>> RewardLogReader::metrics(
    std::string_view run_id, const std::optional<std::string>& name) {
  DICE_RETURN_IF_ERROR(check_key_text("run id", run_id));
  if (name) {
    DICE_RETURN_IF_ERROR(check_key_text("metric name", *name));
    return collect<schema::MetricRecord>(metric_name_prefix(run_id, *name));
  }
  return collect<schema::MetricRecord>(run_prefix(run_id));
}

}  // namespace dice::rewardlog
