#include "rewardlog/rocksdb_util.h"

#include <algorithm>

namespace dice::rewardlog {

std::vector<rocksdb::ColumnFamilyDescriptor> column_family_descriptors(
    const rocksdb::ColumnFamilyOptions& options, const std::vector<std::string>* existing) {
  std::vector<rocksdb::ColumnFamilyDescriptor> descriptors;
  descriptors.emplace_back(rocksdb::kDefaultColumnFamilyName, options);
  for (Family f : kAllFamilies) {
    const bool absent = existing != nullptr && std::find(existing->begin(), existing->end(),
                                                         family_name(f)) == existing->end();
    if (absent && is_optional_family(f)) continue;
    descriptors.emplace_back(family_name(f), options);
  }
  return descriptors;
}

rocksdb::ColumnFamilyHandle* DbHandles::family(Family f) const {
  for (rocksdb::ColumnFamilyHandle* handle : handles) {
    if (handle->GetName() == family_name(f)) return handle;
  }
  return nullptr;
}

Status from_rocksdb(const rocksdb::Status& status, const std::string& context) {
  if (status.ok()) return Status::ok_status();
  const std::string message = context + ": " + status.ToString();
  switch (status.code()) {
    case rocksdb::Status::kNotFound:
      return Status::not_found(message);
    case rocksdb::Status::kCorruption:
      return Status::corruption(message);
    case rocksdb::Status::kIOError:
      if (status.ToString().find("lock") != std::string::npos) {
        return Status::unavailable(message +
                                   " (is another process writing this reward log? only one "
                                   "writer may hold it; readers open it as a secondary)");
      }
      return Status::io_error(message);
    case rocksdb::Status::kInvalidArgument:
    case rocksdb::Status::kNotSupported:
      return Status::invalid_argument(message);
    case rocksdb::Status::kBusy:
    case rocksdb::Status::kTryAgain:
    case rocksdb::Status::kIncomplete:
      return Status::unavailable(message);
    case rocksdb::Status::kTimedOut:
      return Status::timeout(message);
    case rocksdb::Status::kAborted:
    case rocksdb::Status::kShutdownInProgress:
      return Status::aborted(message);
    default:
      return Status::internal(message);
  }
}

Status DbHandles::close(const std::string& context) {
  if (db == nullptr) return Status::ok_status();
  Status first;
  for (rocksdb::ColumnFamilyHandle* handle : handles) {
    const rocksdb::Status s = db->DestroyColumnFamilyHandle(handle);
    if (first.ok() && !s.ok()) first = from_rocksdb(s, context + ": closing a column family");
  }
  handles.clear();
  const rocksdb::Status s = db->Close();
  if (first.ok() && !s.ok() && !s.IsAborted()) first = from_rocksdb(s, context + ": closing");
  delete db;
  db = nullptr;
  return first;
}

DbHandles::~DbHandles() {
  close("reward log").ignore();
}

}  // namespace dice::rewardlog
