// RocksDB plumbing shared by the writer and the reader (internal to dice_rewardlog).
#pragma once

#include <rocksdb/db.h>
#include <rocksdb/options.h>
#include <rocksdb/status.h>

#include <string>
#include <vector>

#include "common/status.h"
#include "rewardlog/keys.h"

namespace dice::rewardlog {

// "default" followed by the families in kAllFamilies order. With `existing` (the log's families,
// rocksdb::DB::ListColumnFamilies), optional families the log lacks are left out: a secondary
// cannot create them, and a log written before they existed must still open.
std::vector<rocksdb::ColumnFamilyDescriptor> column_family_descriptors(
    const rocksdb::ColumnFamilyOptions& options,
    const std::vector<std::string>* existing = nullptr);

// Maps a RocksDB status to a dice Status with "context: " in front. A held LOCK file (another
// writer) becomes Unavailable.
Status from_rocksdb(const rocksdb::Status& status, const std::string& context);

// Owns a DB and its column family handles; closes them in the right order.
struct DbHandles {
  rocksdb::DB* db = nullptr;
  std::vector<rocksdb::ColumnFamilyHandle*> handles;  // [default, runs, steps, ...]

  // The handle of family `f`; null when the log has no such family (an optional one).
  rocksdb::ColumnFamilyHandle* family(Family f) const;
  Status close(const std::string& context);
  ~DbHandles();
};

}  // namespace dice::rewardlog
