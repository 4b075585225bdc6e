// The free-space check (common/disk_space.h) against statvfs results a test double sets, and the
// durable write (common/durable_file.h) on a real file system that fills up: a 2 MiB tmpfs
// (needs root; the test skips without). Either way a write that does not fit fails with an error
// naming the file and the bytes, and the file it would have replaced is intact.
#include "common/disk_space.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "common/durable_file.h"
#include "common/read_file.h"
#include "tests/common/fixed_free_space_file_system.h"
#include "tests/support/small_tmpfs.h"
#include "tests/support/temp_dir.h"

namespace dice {
namespace {

namespace fs = std::filesystem;
using testing_util::FixedFreeSpaceFileSystem;

// The file's text ("" when it cannot be read: the comparisons then fail).
std::string text_of(const std::string& path) {
  Result<std::string> text = read_file(path);
  return text.ok() ? *text : "";
}

TEST(DiskSpaceTest, AWriteThatFitsIsAllowed) {
  FixedFreeSpaceFileSystem disk(100);  // 409600 bytes free
  FreeSpaceCheck check{4096, &disk};
  EXPECT_TRUE(check_free_disk_space("/ckpt", 409600 - 4096, "the checkpoint", check).ok());
  EXPECT_EQ(disk.asked, std::vector<std::string>{"/ckpt"});
}

TEST(DiskSpaceTest, AWriteLargerThanTheFreeSpaceIsRefusedNamingThePathAndTheBytes) {
  FixedFreeSpaceFileSystem disk(100);
  const Status refused =
      check_free_disk_space("/ckpt/policy-v3", 409601, "the policy checkpoint", {0, &disk});
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.code(), StatusCode::kIOError);
  EXPECT_EQ(refused.message(),
            "/ckpt/policy-v3: not enough free disk space for the policy checkpoint: it needs "
            "409601 bytes; 409600 bytes are free");
  EXPECT_TRUE(is_disk_space_shortage(refused));
}

TEST(DiskSpaceTest, TheFloorMustStayFreeAfterTheWrite) {
  FixedFreeSpaceFileSystem disk(3 * 256 + 1);  // 3 MiB and a block
  FreeSpaceCheck check{2 * kBytesPerMiB, &disk};
  EXPECT_TRUE(check_free_disk_space("/d", kBytesPerMiB + 4096, "x", check).ok());
  const Status refused =
      check_free_disk_space("/d", kBytesPerMiB + 4097, "the resume folder", check);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.message(),
            "/d: not enough free disk space for the resume folder: it needs 1.0 MiB (1052673 "
            "bytes) and run.min_free_disk_mb keeps 2.0 MiB (2097152 bytes) free; 3.0 MiB "
            "(3149824 bytes) are free");
  // Even a write of nothing is refused below the floor.
  FixedFreeSpaceFileSystem low(10);
  EXPECT_FALSE(check_free_disk_space("/d", 0, "x", {kBytesPerMiB, &low}).ok());
}

// A checkpoint's folder does not exist before it is written: its nearest existing parent's file
// system is asked.
TEST(DiskSpaceTest, AMissingPathIsCheckedOnItsNearestExistingParent) {
  FixedFreeSpaceFileSystem disk(1);
  disk.missing = {"runs/r1/policy-v1", "runs/r1"};
  EXPECT_TRUE(check_free_disk_space("runs/r1/policy-v1", 4096, "x", {0, &disk}).ok());
  EXPECT_EQ(disk.asked, (std::vector<std::string>{"runs/r1/policy-v1", "runs/r1", "runs"}));
  // On the real file system too.
  testing_util::TempDir dir("dice-disk-space");
  auto free_bytes = free_disk_bytes(dir.sub("not/yet/made"));
  ASSERT_TRUE(free_bytes.ok()) << free_bytes.status().to_string();
  EXPECT_GT(*free_bytes, 0u);
}

TEST(DiskSpaceTest, TreeBytesCountsTheFilesUnderAFolder) {
  testing_util::TempDir dir("dice-disk-space");
  fs::create_directories(dir.sub("a/b"));
  std::ofstream(dir.sub("a/one")) << std::string(1000, 'x');
  std::ofstream(dir.sub("a/b/two")) << std::string(24, 'y');
  EXPECT_EQ(tree_bytes(dir.sub("a")), 1024u);
  EXPECT_EQ(tree_bytes(dir.sub("missing")), 0u);
}

// The durable write asks before it makes its temporary: refused, nothing is opened and the old
// file stays.
TEST(DiskSpaceTest, ADurableWriteThatWouldNotFitIsRefusedBeforeItsFirstByte) {
  testing_util::TempDir dir("dice-disk-space");
  const std::string path = dir.sub("state.yaml");
  ASSERT_TRUE(write_file_atomically(path, "old").ok());
  FixedFreeSpaceFileSystem disk(1);  // 4096 bytes
  DurableWriteOptions options;
  options.file_system = &disk;
  const Status refused = write_file_atomically(path, std::string(4097, 'n'), options);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.message().find(dir.path() + ": not enough free disk space for the new " + path +
                                   ": it needs 4097 bytes; 4096 bytes are free"),
            std::string::npos)
      << refused.to_string();
  EXPECT_TRUE(disk.opened.empty());
  EXPECT_EQ(text_of(path), "old");
  // With the floor: a write that fits the disk but not the floor is refused too.
  options.min_free_bytes = 1;
  EXPECT_FALSE(write_file_atomically(path, std::string(4096, 'n'), options).ok());
  options.min_free_bytes = 0;
  ASSERT_TRUE(write_file_atomically(path, std::string(4096, 'n'), options).ok());
  EXPECT_EQ(text_of(path).size(), 4096u);
}

// A real disk that fills: the check refuses a file larger than the free space, and a write whose
// size was not known in advance meets ENOSPC midway; both leave the earlier file whole, no
// temporary, and the space as it was.
TEST(DiskSpaceTest, AFullTmpfsFailsTheWriteAndKeepsTheEarlierFile) {
  testing_util::SmallTmpfs disk(2048);
  if (!disk.mounted()) GTEST_SKIP() << disk.skip_reason();
  const std::string path = disk.sub("checkpoint.bin");
  const std::string earlier(512 * 1024, 'e');
  ASSERT_TRUE(write_file_atomically(path, earlier).ok());
  auto free_before = free_disk_bytes(disk.path());
  ASSERT_TRUE(free_before.ok()) << free_before.status().to_string();

  const Status refused = write_file_atomically(path, std::string(3 * kBytesPerMiB, 'n'));
  ASSERT_FALSE(refused.ok());
  EXPECT_TRUE(is_disk_space_shortage(refused)) << refused.to_string();
  EXPECT_NE(refused.message().find(disk.path() + ": not enough free disk space for the new " +
                                   path + ": it needs 3.0 MiB (3145728 bytes)"),
            std::string::npos)
      << refused.to_string();

  const std::string big(3 * kBytesPerMiB, 'n');
  const Status full = write_file_atomically_with(
      path, [&](int fd) { return write_all(fd, big.data(), big.size(), path); });
  ASSERT_FALSE(full.ok());
  EXPECT_TRUE(is_disk_space_shortage(full)) << full.to_string();
  EXPECT_NE(full.message().find(path), std::string::npos) << full.to_string();

  EXPECT_EQ(text_of(path), earlier);
  EXPECT_FALSE(fs::exists(path + ".tmp"));
  auto free_after = free_disk_bytes(disk.path());
  ASSERT_TRUE(free_after.ok());
  EXPECT_EQ(*free_after, *free_before);
}

}  // namespace
}  // namespace dice
