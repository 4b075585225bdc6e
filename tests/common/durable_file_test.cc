// Durable writes (common/durable_file.h) through a FileSystem that records every call: the order
// of the writes is the point (the bytes synced before the rename, the rename before the folder's
// sync), and the file's mode is exact from its creation on, even over a stale temporary.
#include "common/durable_file.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "common/remove_tree.h"
#include "tests/common/recording_file_system.h"

namespace dice {
namespace {

namespace fs = std::filesystem;
using testing_util::RecordingFileSystem;

std::string read_text(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

mode_t mode_of(const fs::path& path) {
  struct stat info {};
  EXPECT_EQ(::stat(path.c_str(), &info), 0) << path;
  return info.st_mode & 07777;
}

class DurableFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/dice_durable_file_XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    dir_ = pattern;
  }
  void TearDown() override { EXPECT_TRUE(remove_tree(dir_).ok()); }

  DurableWriteOptions recorded(mode_t mode = 0644) {
    DurableWriteOptions options;
    options.mode = mode;
    options.file_system = &recorder_;
    return options;
  }

  fs::path dir_;
  RecordingFileSystem recorder_;
};

TEST_F(DurableFileTest, TheBytesAreSyncedBeforeTheRenameAndTheFolderAfterIt) {
  const std::string path = (dir_ / "state.yaml").string();
  ASSERT_TRUE(write_file_atomically(path, "new", recorded()).ok());
  const std::string tmp = path + ".tmp";
  EXPECT_EQ(recorder_.calls, (std::vector<std::string>{
                                 "unlink " + tmp,
                                 "create " + tmp + " 0644",
                                 "fchmod " + tmp + " 0644",
                                 "write " + tmp,
                                 "fsync " + tmp,
                                 "close " + tmp,
                                 "rename " + tmp + " " + path,
                                 "open " + dir_.string(),
                                 "fsync " + dir_.string(),
                                 "close " + dir_.string(),
                             }));
  EXPECT_EQ(read_text(path), "new");
  EXPECT_FALSE(fs::exists(tmp));
}

TEST_F(DurableFileTest, TheModeIsExactFromTheStartEvenOverAStaleTemporary) {
  const fs::path path = dir_ / "key";
  // A crash left a temporary others may read; the umask would narrow 0640 to 0600.
  std::ofstream(dir_ / "key.tmp") << "stale";
  fs::permissions(dir_ / "key.tmp", fs::perms(0644));
  const mode_t umask_was = ::umask(077);
  Status written = write_file_atomically(path.string(), "secret", recorded(0600));
  ::umask(umask_was);
  ASSERT_TRUE(written.ok()) << written.to_string();
  EXPECT_EQ(mode_of(path), 0600u);
  EXPECT_EQ(read_text(path), "secret");
  // Created afresh with the mode (O_EXCL), never reopened with the stale one's.
  EXPECT_EQ(recorder_.calls[1], "create " + path.string() + ".tmp 0600");

  const mode_t umask_before = ::umask(077);
  written = write_file_atomically((dir_ / "shared").string(), "x", recorded(0640));
  ::umask(umask_before);
  ASSERT_TRUE(written.ok()) << written.to_string();
  EXPECT_EQ(mode_of(dir_ / "shared"), 0640u);
}

TEST_F(DurableFileTest, AFailedWriteLeavesTheOldFileAndNoTemporary) {
  const fs::path path = dir_ / "position.json";
  std::ofstream(path) << "old";
  Status failed = write_file_atomically_with(
      path.string(), [](int) { return Status::io_error("disk full"); }, recorded());
  EXPECT_EQ(failed.code(), StatusCode::kIOError);
  EXPECT_NE(failed.message().find(path.string()), std::string::npos) << failed.to_string();
  EXPECT_EQ(read_text(path), "old");
  EXPECT_FALSE(fs::exists(dir_ / "position.json.tmp"));
  for (const std::string& call : recorder_.calls)
    EXPECT_EQ(call.rfind("rename", 0), std::string::npos);

  Status missing = write_file_atomically((dir_ / "no-such-folder" / "f").string(), "x");
  EXPECT_EQ(missing.code(), StatusCode::kIOError);
  EXPECT_NE(missing.message().find("no-such-folder/f.tmp: cannot create"), std::string::npos)
      << missing.to_string();
}

TEST_F(DurableFileTest, SyncTreeSyncsEachEntryBeforeTheFolderThatNamesIt) {
  fs::create_directories(dir_ / "model" / "deep");
  std::ofstream(dir_ / "model" / "deep" / "a.bin") << "a";
  std::ofstream(dir_ / "optimizer.pt") << "o";
  ASSERT_TRUE(sync_tree(dir_.string(), recorder_).ok());
  const std::vector<std::string> synced = recorder_.synced();
  auto at = [&](const fs::path& p) {
    return std::find(synced.begin(), synced.end(), p.string()) - synced.begin();
  };
  ASSERT_EQ(synced.size(), 5u) << ::testing::PrintToString(synced);
  EXPECT_LT(at(dir_ / "model" / "deep" / "a.bin"), at(dir_ / "model" / "deep"));
  EXPECT_LT(at(dir_ / "model" / "deep"), at(dir_ / "model"));
  EXPECT_LT(at(dir_ / "model"), at(dir_));
  EXPECT_LT(at(dir_ / "optimizer.pt"), at(dir_));
  EXPECT_EQ(synced.back(), dir_.string());
}

TEST_F(DurableFileTest, EachFolderMadeIsSyncedInItsParentAndExistingOnesAreLeft) {
  const fs::path run = dir_ / "checkpoints" / "run-1";
  ASSERT_TRUE(create_directories_durably(run.string(), recorder_).ok());
  EXPECT_TRUE(fs::is_directory(run));
  // The parent of each folder made, outermost first: dir_ names checkpoints, checkpoints names
  // run-1.
  EXPECT_EQ(recorder_.synced(),
            (std::vector<std::string>{dir_.string(), (dir_ / "checkpoints").string()}));

  recorder_.calls.clear();
  ASSERT_TRUE(create_directories_durably(run.string(), recorder_).ok());
  EXPECT_TRUE(recorder_.synced().empty());
}

TEST_F(DurableFileTest, AFolderThatCannotBeMadeIsAnErrorNamingIt) {
  std::ofstream(dir_ / "a-file") << "x";
  const Status made = create_directories_durably((dir_ / "a-file" / "run").string(), recorder_);
  ASSERT_FALSE(made.ok());
  EXPECT_NE(made.message().find((dir_ / "a-file").string()), std::string::npos) << made.to_string();
}

}  // namespace
}  // namespace dice
