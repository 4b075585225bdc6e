// The reward log on a disk that fills (RewardLogOptions::min_free_bytes): a batch that would not
// leave the floor free is refused before RocksDB sees it, with an error naming the folder and the
// bytes, the verdicts acknowledged before stay, and the log takes writes again once there is room.
// Against statvfs results a test double sets (FixedFreeSpaceFileSystem), and on a real tmpfs that
// fills up (needs root; skipped without).
#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "common/disk_space.h"
#include "rewardlog/reader.h"
#include "rewardlog/writer.h"
#include "tests/common/fixed_free_space_file_system.h"
#include "tests/rewardlog/rewardlog_test_util.h"
#include "tests/support/small_tmpfs.h"

namespace dice::rewardlog {
namespace {

namespace fs = std::filesystem;
using testing::candidate_record;
using testing::TempDir;
using testing_util::FixedFreeSpaceFileSystem;

std::vector<LogRecord> one(LogRecord record) {
  std::vector<LogRecord> records;
  records.push_back(std::move(record));
  return records;
}

// The (step, sample) of every candidate of run "r" in the log at `path`.
std::vector<std::pair<std::uint64_t, std::uint32_t>> logged_candidates(const std::string& path) {
  RewardLogReaderOptions options;
  options.path = path;
  auto reader = RewardLogReader::open(options);
  EXPECT_TRUE(reader.ok()) << reader.status().to_string();
  std::vector<std::pair<std::uint64_t, std::uint32_t>> out;
  if (!reader.ok()) return out;
  auto candidates = (*reader)->candidates("r");
  EXPECT_TRUE(candidates.ok()) << candidates.status().to_string();
  if (!candidates.ok()) return out;
  for (const auto& c : *candidates) {
    out.emplace_back(c.get().getVerdict().getStep(), c.get().getVerdict().getSampleIndex());
  }
  return out;
}

// Free space set by a test double: refused below the floor by append(), enqueue() + flush() and
// erase_run_from(), each naming the folder and the bytes; what was acknowledged stays, and with
// room again the log takes writes.
TEST(RewardLogFullDiskTest, ABatchThatWouldNotFitIsRefusedAndTheLogKeepsWhatItHad) {
  TempDir dir;
  FixedFreeSpaceFileSystem disk(1024);  // 4 MiB free
  RewardLogOptions options;
  options.path = dir.sub("log");
  options.min_free_bytes = 2 * kBytesPerMiB;
  options.min_free_name = "a quarter of run.min_free_disk_mb";
  options.file_system = &disk;
  auto writer = RewardLogWriter::open(options);
  ASSERT_TRUE(writer.ok()) << writer.status().to_string();
  ASSERT_TRUE((*writer)->append(one(candidate_record("r", 0, "t", 0))).ok());
  EXPECT_FALSE(disk.asked.empty()) << "the batch was written without a look at the free space";

  disk.free_blocks = 512;  // 2 MiB: the floor, no room for a batch
  const Status refused = (*writer)->append(one(candidate_record("r", 0, "t", 1)));
  ASSERT_FALSE(refused.ok());
  EXPECT_TRUE(is_disk_space_shortage(refused)) << refused.to_string();
  EXPECT_NE(refused.message().find(options.path +
                                   ": not enough free disk space for a batch of 1 reward-log "
                                   "records: it needs "),
            std::string::npos)
      << refused.to_string();
  EXPECT_NE(refused.message().find("a quarter of run.min_free_disk_mb keeps 2.0 MiB (2097152 "
                                   "bytes) free; 2.0 MiB (2097152 bytes) are free"),
            std::string::npos)
      << refused.to_string();
  ASSERT_TRUE((*writer)->enqueue(one(candidate_record("r", 0, "t", 2))).ok());
  EXPECT_TRUE(is_disk_space_shortage((*writer)->flush()));
  const auto erased = (*writer)->erase_run_from("r", 0);
  EXPECT_TRUE(is_disk_space_shortage(erased.status())) << erased.status().to_string();

  disk.free_blocks = 1024;  // room again: the log was never broken
  ASSERT_TRUE((*writer)->append(one(candidate_record("r", 1, "t", 3))).ok());
  ASSERT_TRUE((*writer)->close().ok());
  const std::vector<std::pair<std::uint64_t, std::uint32_t>> expected = {{0, 0}, {1, 3}};
  EXPECT_EQ(logged_candidates(options.path), expected);
}

// A real disk that fills: the log's verdicts come batch by batch while a filler takes the rest of
// the tmpfs; the first batch that would cross the floor is refused with the free-space error (not
// RocksDB's ENOSPC, which turns a database read-only), and every verdict acknowledged before it
// is in the log when it is opened again.
TEST(RewardLogFullDiskTest, OnARealTmpfsTheLogStopsAtItsFloorAndKeepsEveryAcknowledgedVerdict) {
  testing_util::SmallTmpfs tmpfs(8192);
  if (!tmpfs.mounted()) GTEST_SKIP() << tmpfs.skip_reason();
  RewardLogOptions options;
  options.path = tmpfs.sub("log");
  options.min_free_bytes = kBytesPerMiB;
  auto writer = RewardLogWriter::open(options);
  ASSERT_TRUE(writer.ok()) << writer.status().to_string();

  // Leave the floor and 256 KiB: room for a few batches of 16 verdicts with 4 KiB responses.
  auto free_now = free_disk_bytes(tmpfs.path());
  ASSERT_TRUE(free_now.ok()) << free_now.status().to_string();
  ASSERT_GT(*free_now, options.min_free_bytes + 256 * 1024);
  {
    std::ofstream filler(tmpfs.sub("filler"), std::ios::binary);
    const std::string block(4096, 'f');
    for (std::uint64_t n = 0; n < *free_now - options.min_free_bytes - 256 * 1024; n += 4096) {
      filler << block;
    }
    ASSERT_TRUE(filler.good());
  }

  const std::string response(4096, 'x');
  std::vector<std::pair<std::uint64_t, std::uint32_t>> acknowledged;
  Status refused;
  for (std::uint32_t batch = 0; batch < 1000 && refused.ok(); ++batch) {
    std::vector<LogRecord> records;
    for (std::uint32_t k = 0; k < 16; ++k) {
      records.push_back(candidate_record("r", 0, "t", 16 * batch + k, "", response));
    }
    refused = (*writer)->append(std::move(records));
    if (!refused.ok()) break;
    for (std::uint32_t k = 0; k < 16; ++k) acknowledged.emplace_back(0, 16 * batch + k);
  }
  ASSERT_FALSE(refused.ok()) << "the disk never filled";
  EXPECT_NE(refused.message().find(options.path +
                                   ": not enough free disk space for a batch of 16 reward-log "
                                   "records"),
            std::string::npos)
      << refused.to_string();
  EXPECT_FALSE(acknowledged.empty());
  auto free_left = free_disk_bytes(tmpfs.path());
  ASSERT_TRUE(free_left.ok());
  EXPECT_GT(*free_left, options.min_free_bytes / 2) << "RocksDB's own room was not kept";

  ASSERT_TRUE((*writer)->close().ok());
  fs::remove(tmpfs.sub("filler"));
  EXPECT_EQ(logged_candidates(options.path), acknowledged);
}

}  // namespace
}  // namespace dice::rewardlog
