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

// "default" followed by the five families in kAllFamilies order; handle i + 1 is family i.
std::vector<rocksdb::ColumnFamilyDescriptor> column_family_descriptors(
    const rocksdb::ColumnFamilyOptions& options);

// Maps a RocksDB status to a dice Status with "context: " in front. A held LOCK file (another
// writer) becomes Unavailable.
Status from_rocksdb(const rocksdb::Status& status, const std::string& context);

// Owns a DB and its column family handles; closes them in the right order.
struct DbHandles {
  rocksdb::DB* db = nullptr;
  std::vector<rocksdb::ColumnFamilyHandle*> handles;  // [default, runs, steps, ...]

  rocksdb::ColumnFamilyHandle* family(Family f) const {
    return handles[static_cast<size_t>(f) + 1];
  }
  Status close(const std::string& context);
  ~DbHandles();
};

}  // namespace dice::rewardlog
