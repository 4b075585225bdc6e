// A file written durably from a stream (common/durable_stream.h): its bytes synced before the
// rename, the floor of free space checked as the bytes come, and a disk that fills (a real 2 MiB
// tmpfs; needs root, skipped without) failing the write with the file as it was before.
#include "common/durable_stream.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "common/disk_space.h"
#include "common/read_file.h"
#include "tests/common/fixed_free_space_file_system.h"
#include "tests/common/recording_file_system.h"
#include "tests/support/small_tmpfs.h"
#include "tests/support/temp_dir.h"

namespace dice {
namespace {

namespace fs = std::filesystem;

// The file's text ("" when it cannot be read: the comparisons then fail).
std::string text_of(const std::string& path) {
  Result<std::string> text = read_file(path);
  return text.ok() ? *text : "";
}

// Writes `lines` numbered lines of 100 bytes, calling `after_line` after each.
std::function<Status(std::ostream&)> numbered_lines(int lines,
                                                    std::function<void(int)> after_line = {}) {
  return [lines, after_line](std::ostream& out) {
    for (int i = 0; i < lines; ++i) {
      std::string line = std::to_string(i);
      line.resize(99, '.');
      out << line << '\n';
      if (after_line) after_line(i);
    }
    return out ? Status::ok_status() : Status::io_error("export: the stream failed");
  };
}

TEST(DurableStreamTest, TheWholeStreamIsOnTheDiskBeforeItTakesItsName) {
  testing_util::TempDir dir("dice-durable-stream");
  const std::string path = dir.sub("export.jsonl");
  testing_util::RecordingFileSystem recorder;
  StreamWriteOptions options;
  options.file.file_system = &recorder;
  ASSERT_TRUE(write_stream_atomically(path, numbered_lines(2000), options).ok());

  const std::string text = text_of(path);
  ASSERT_EQ(text.size(), 200000u);  // more than one block of the stream's buffer
  EXPECT_EQ(text.substr(0, 3), "0..");
  EXPECT_EQ(text.substr(199900, 5), "1999.");
  const std::vector<std::string>& calls = recorder.calls;
  auto at = [&](const std::string& call) {
    return static_cast<std::size_t>(std::find(calls.begin(), calls.end(), call) - calls.begin());
  };
  const std::size_t renamed = at("rename " + path + ".tmp " + path);
  ASSERT_LT(renamed, calls.size()) << ::testing::PrintToString(calls);
  EXPECT_LT(at("fsync " + path + ".tmp"), renamed);
  EXPECT_LT(renamed, at("fsync " + dir.path())) << ::testing::PrintToString(calls);
}

// The disk fills while the stream is written (another writer took the space): the next check of
// the floor stops the write, naming the floor, and the file is as it was.
TEST(DurableStreamTest, TheFloorIsCheckedAsTheBytesComeAndStopsTheWrite) {
  testing_util::TempDir dir("dice-durable-stream");
  const std::string path = dir.sub("export.jsonl");
  ASSERT_TRUE(write_file_atomically(path, "the export before").ok());
  testing_util::FixedFreeSpaceFileSystem disk(std::uint64_t{1} << 18);  // 1 GiB
  StreamWriteOptions options;
  options.file.file_system = &disk;
  options.file.min_free_bytes = 10 * kBytesPerMiB;
  options.file.min_free_name = "--min-free-mb";
  options.check_every_bytes = 100 * 1000;
  int lines_written = 0;
  const Status stopped = write_stream_atomically(path,
                                                 numbered_lines(10000,
                                                                [&](int i) {
                                                                  lines_written = i + 1;
                                                                  if (i == 2000)
                                                                    disk.free_blocks =
                                                                        256;  // 1 MiB
                                                                }),
                                                 options);
  ASSERT_FALSE(stopped.ok());
  EXPECT_EQ(stopped.message(), path + ": " + dir.path() +
                                   ": not enough free disk space for the rest of " + path +
                                   ": --min-free-mb keeps 10.0 MiB (10485760 bytes) free; 1.0 MiB "
                                   "(1048576 bytes) are free");
  EXPECT_TRUE(is_disk_space_shortage(stopped));
  EXPECT_EQ(text_of(path), "the export before");
  EXPECT_FALSE(fs::exists(path + ".tmp"));
  EXPECT_EQ(lines_written, 10000);  // the writer ran on into a failed stream
}

TEST(DurableStreamTest, AnErrorOfTheWriterLeavesTheFileAsItWas) {
  testing_util::TempDir dir("dice-durable-stream");
  const std::string path = dir.sub("export.csv");
  ASSERT_TRUE(write_file_atomically(path, "a,b\n").ok());
  const Status failed = write_stream_atomically(path, [](std::ostream& out) {
    out << "c,d\n";
    return Status::corruption("record 7: damaged");
  });
  EXPECT_EQ(failed.code(), StatusCode::kCorruption);
  EXPECT_NE(failed.message().find("record 7: damaged"), std::string::npos) << failed.to_string();
  EXPECT_EQ(text_of(path), "a,b\n");
  EXPECT_FALSE(fs::exists(path + ".tmp"));
}

// A real disk that fills: the stream's write meets ENOSPC, the error names the file, and the
// earlier file is whole.
TEST(DurableStreamTest, AFullTmpfsFailsTheWriteAndKeepsTheEarlierFile) {
  testing_util::SmallTmpfs disk(2048);
  if (!disk.mounted()) GTEST_SKIP() << disk.skip_reason();
  const std::string path = disk.sub("export.jsonl");
  ASSERT_TRUE(write_stream_atomically(path, numbered_lines(1000)).ok());
  const std::string earlier = text_of(path);
  ASSERT_EQ(earlier.size(), 100000u);

  const Status full = write_stream_atomically(path, numbered_lines(30000));  // 3 MB
  ASSERT_FALSE(full.ok());
  EXPECT_TRUE(is_disk_space_shortage(full)) << full.to_string();
  EXPECT_NE(full.message().find(path + ".tmp: write failed"), std::string::npos)
      << full.to_string();
  EXPECT_EQ(text_of(path), earlier);
  EXPECT_FALSE(fs::exists(path + ".tmp"));
}

}  // namespace
}  // namespace dice
