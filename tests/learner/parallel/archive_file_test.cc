// save_archive_file (learner/parallel/archive_file.h): a LibTorch archive written durably, a failed
// write returned as an error instead of LibTorch's throw from a destructor (which aborts the
// process). The disk that fills is a FileSystem whose writes fail with ENOSPC past a byte budget;
// the learner's integration test does it on a real tmpfs.
#include "learner/parallel/archive_file.h"

#include <gtest/gtest.h>
#include <torch/serialize/input-archive.h>
#include <torch/serialize/output-archive.h>
#include <unistd.h>

#include <ATen/ATen.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/disk_space.h"
#include "common/remove_tree.h"

namespace dice {
namespace {

namespace fs = std::filesystem;

// The real file system, with room for `budget` bytes of writes in all: past them a write writes
// what still fits, then fails with ENOSPC, as a full disk does.
class FillingFileSystem : public FileSystem {
 public:
  explicit FillingFileSystem(size_t budget) : budget_(budget) {}
  ssize_t write(int fd, const void* data, size_t size) override {
    if (budget_ == 0) {
      errno = ENOSPC;
      return -1;
    }
    const ssize_t n = FileSystem::write(fd, data, std::min(size, budget_));
    if (n > 0) budget_ -= static_cast<size_t>(n);
    return n;
  }

 private:
  size_t budget_;
};

std::string read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

class ArchiveFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("dice_archive_file_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    ASSERT_TRUE(remove_tree(dir_).ok());
    fs::create_directories(dir_);
    archive_.write("weights", at::arange(1 << 16, at::kFloat));  // 256 KiB of data
  }
  void TearDown() override { EXPECT_TRUE(remove_tree(dir_).ok()); }

  fs::path dir_;
  torch::serialize::OutputArchive archive_;
};

TEST_F(ArchiveFileTest, TheArchiveReadsBack) {
  const std::string path = (dir_ / "optimizer.pt").string();
  ASSERT_TRUE(save_archive_file(archive_, path, "optimizer state").ok());
  torch::serialize::InputArchive in;
  in.load_from(path);
  at::Tensor weights;
  in.read("weights", weights);
  EXPECT_TRUE(weights.equal(at::arange(1 << 16, at::kFloat)));
  EXPECT_FALSE(fs::exists(path + ".tmp"));
}

// LibTorch's own save_to(path) would abort here (its file writer throws from its destructor).
TEST_F(ArchiveFileTest, ADiskThatFillsMidArchiveIsAnErrorNamingTheFileAndTheOldFileStays) {
  const std::string path = (dir_ / "optimizer.pt").string();
  std::ofstream(path) << "the state saved before";
  FillingFileSystem full(100 * 1024);
  DurableWriteOptions options;
  options.file_system = &full;
  const Status saved = save_archive_file(archive_, path, "optimizer state", options);

  ASSERT_FALSE(saved.ok());
  EXPECT_EQ(saved.code(), StatusCode::kIOError);
  const std::string& message = saved.message();
  EXPECT_EQ(message.rfind(path + ": optimizer state of ", 0), 0u) << message;
  EXPECT_NE(message.find(" bytes: the write at byte 102400 failed: " +
                         std::string(std::strerror(ENOSPC))),
            std::string::npos)
      << message;
  EXPECT_TRUE(is_disk_space_shortage(saved)) << "the learner exits 3 (kExitNoDiskSpace)";
  EXPECT_EQ(read_text(path), "the state saved before");
  EXPECT_FALSE(fs::exists(path + ".tmp"));
}

// The archive's size in the error is the whole archive's, what the disk would have needed.
TEST_F(ArchiveFileTest, TheErrorSaysHowLargeTheWholeArchiveIs) {
  const std::string whole = (dir_ / "whole.pt").string();
  ASSERT_TRUE(save_archive_file(archive_, whole, "optimizer state").ok());
  FillingFileSystem full(0);
  DurableWriteOptions options;
  options.file_system = &full;
  const Status saved =
      save_archive_file(archive_, (dir_ / "optimizer.pt").string(), "optimizer state", options);
  ASSERT_FALSE(saved.ok());
  EXPECT_NE(saved.message().find("optimizer state of " + std::to_string(fs::file_size(whole)) +
                                 " bytes: the write at byte 0 failed"),
            std::string::npos)
      << saved.message();
}

}  // namespace
}  // namespace dice
