// A reward log written, then read and closed, in a process that has loaded LibTorch, as the
// learner does when it starts with a log already on disk (a restart with --resume, or a new run
// into a log of earlier runs). PyTorch's LibTorch 2.x wheels export their own copy of
// std::filesystem::remove_all, which crashes, and the dynamic linker binds every caller in such a
// process to it: a learner restarted on an H100 died in the log reader's destructor, which removed
// its secondary folder with it (common/remove_tree.h). Against Debian's LibTorch 1.13 (CI) the
// test checks the reader's clean-up; on a GPU node built against a PyTorch wheel it is the check
// that the crash is gone.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <string>

#include "model/torch_compat.h"
#include "rewardlog/reader.h"
#include "rewardlog/writer.h"
#include "tests/rewardlog/rewardlog_test_util.h"

namespace dice::rewardlog {
namespace {

using testing::run_record;
using testing::TempDir;

TEST(RewardLogBesideTorchTest, AReaderOfAnExistingLogClosesCleanlyBesideLibTorch) {
  // A call into libtorch.so, so that the library is loaded, as in the learner.
  ASSERT_FALSE(compat::describe_torch().empty());
  TempDir dir;
  // The reader's secondary folder goes under $TMPDIR: here, to see it removed.
  const std::string tmp = dir.sub("tmp");
  ASSERT_TRUE(std::filesystem::create_directories(tmp));
  const char* old_tmpdir = getenv("TMPDIR");
  const std::string restore = old_tmpdir != nullptr ? old_tmpdir : "";
  setenv("TMPDIR", tmp.c_str(), 1);

  RewardLogOptions options;
  options.path = dir.sub("log");
  auto writer = RewardLogWriter::open(options);
  ASSERT_TRUE(writer.ok()) << writer.status().to_string();
  ASSERT_TRUE((*writer)->append({run_record("first-run")}).ok());
  ASSERT_TRUE((*writer)->close().ok());
  writer->reset();
  {
    RewardLogReaderOptions reading;
    reading.path = options.path;
    auto reader = RewardLogReader::open(reading);
    ASSERT_TRUE(reader.ok()) << reader.status().to_string();
    EXPECT_FALSE(std::filesystem::is_empty(tmp));  // its secondary folder
    auto run = (*reader)->run("first-run");
    ASSERT_TRUE(run.ok()) << run.status().to_string();
  }
  EXPECT_TRUE(std::filesystem::is_empty(tmp)) << "the reader left its secondary folder";

  if (old_tmpdir != nullptr) {
    setenv("TMPDIR", restore.c_str(), 1);
  } else {
    unsetenv("TMPDIR");
  }
}

}  // namespace
}  // namespace dice::rewardlog
