// A policy checkpoint reaches the disk whole before it takes its name: every file of
// `dir`.partial (the weights, and the tokenizer copied beside them, whose copy does not sync) is
// fsynced before the rename, and the folder holding it after, so the checkpoint a resume folder
// names survives a power loss.
#include "learner/train/policy_checkpoint.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "common/disk_space.h"
#include "common/remove_tree.h"
#include "model/weights.h"
#include "tests/common/fixed_free_space_file_system.h"
#include "tests/common/recording_file_system.h"
#include "tests/model/model_test_util.h"
#include "tests/support/small_tmpfs.h"

namespace dice {
namespace {

namespace fs = std::filesystem;

TEST(PolicyCheckpointTest, EveryFileIsOnTheDiskBeforeTheFolderTakesItsName) {
  char pattern[] = "/tmp/dice_policy_checkpoint_XXXXXX";
  ASSERT_NE(mkdtemp(pattern), nullptr);
  const fs::path base = pattern;
  fs::create_directories(base / "initial");
  std::ofstream(base / "initial" / "tokenizer.json") << "{}";
  Qwen3LM model = testing_util::random_lm(testing_util::tiny_config(), 3);
  testing_util::RecordingFileSystem recorder;
  const std::string dir = (base / "policy-v1").string();
  Status saved = save_policy_checkpoint(*model, (base / "initial").string(), dir,
                                        /*min_free_bytes=*/0, recorder);
  ASSERT_TRUE(saved.ok()) << saved.to_string();

  const std::vector<std::string>& calls = recorder.calls;
  auto at = [&](const std::string& call) {
    return static_cast<std::size_t>(std::find(calls.begin(), calls.end(), call) - calls.begin());
  };
  const std::string partial = dir + ".partial";
  const std::size_t named = at("rename " + partial + " " + dir);
  ASSERT_LT(named, calls.size()) << ::testing::PrintToString(calls);
  for (const std::string& entry : {partial + "/model.safetensors", partial + "/config.json",
                                   partial + "/tokenizer.json", partial}) {
    EXPECT_LT(at("fsync " + entry), named) << entry << " not synced before the rename";
  }
  EXPECT_LT(named, at("fsync " + base.string())) << ::testing::PrintToString(calls);
  EXPECT_TRUE(fs::exists(fs::path(dir) / "tokenizer.json"));
  EXPECT_TRUE(load_qwen3_lm(dir).ok());
  EXPECT_TRUE(remove_tree(base.string()).ok());  // not fs::remove_all: remove_tree.h says why
}

// A checkpoint that would not fit the disk with run.min_free_disk_mb to spare is refused before
// its first byte, naming the folder and the bytes; the checkpoint before it is untouched.
TEST(PolicyCheckpointTest, ACheckpointThatWouldNotFitIsRefusedBeforeItsFirstByte) {
  char pattern[] = "/tmp/dice_policy_checkpoint_XXXXXX";
  ASSERT_NE(mkdtemp(pattern), nullptr);
  const std::string base = pattern;
  Qwen3LM model = testing_util::random_lm(testing_util::tiny_config(), 3);
  ASSERT_TRUE(save_policy_checkpoint(*model, base + "/initial", base + "/policy-v1").ok());
  const std::uint64_t size = tree_bytes(base + "/policy-v1");

  const std::string dir = base + "/policy-v2";
  testing_util::FixedFreeSpaceFileSystem small_disk(size / 4096 / 2);  // half the checkpoint
  const Status refused = save_policy_checkpoint(*model, base + "/initial", dir, 0, small_disk);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.message().find(dir + ": not enough free disk space for the policy "
                                         "checkpoint: it needs "),
            std::string::npos)
      << refused.to_string();
  EXPECT_FALSE(fs::exists(dir));
  EXPECT_FALSE(fs::exists(dir + ".partial"));

  // Room for the checkpoint, not for the floor besides.
  testing_util::FixedFreeSpaceFileSystem large_disk(std::uint64_t{1} << 20);  // 4 GiB
  const Status below_floor =
      save_policy_checkpoint(*model, base + "/initial", dir, 4096 * kBytesPerMiB, large_disk);
  ASSERT_FALSE(below_floor.ok());
  EXPECT_NE(below_floor.message().find("run.min_free_disk_mb keeps 4.0 GiB"), std::string::npos)
      << below_floor.to_string();
  EXPECT_FALSE(fs::exists(dir));
  EXPECT_TRUE(
      save_policy_checkpoint(*model, base + "/initial", dir, kBytesPerMiB, large_disk).ok());

  EXPECT_TRUE(load_qwen3_lm(base + "/policy-v1").ok());
  EXPECT_EQ(tree_bytes(base + "/policy-v1"), size);
  EXPECT_TRUE(remove_tree(base).ok());
}

// A disk that fills after the check (another writer took the space): the write fails midway with
// the disk's error, the half-written folder is removed (its space is the run's), and the earlier
// checkpoint is whole. A real full disk: a 2 MiB tmpfs (needs root; skipped without).
TEST(PolicyCheckpointTest, ADiskThatFillsMidWriteKeepsTheEarlierCheckpoint) {
  testing_util::SmallTmpfs disk(2048);
  if (!disk.mounted()) GTEST_SKIP() << disk.skip_reason();
  Qwen3LM model = testing_util::random_lm(testing_util::tiny_config(), 3);
  const std::string initial = disk.sub("initial");  // no side files
  ASSERT_TRUE(save_policy_checkpoint(*model, initial, disk.sub("policy-v1")).ok());
  const std::uint64_t size = tree_bytes(disk.sub("policy-v1"));
  auto free_bytes = free_disk_bytes(disk.path());
  ASSERT_TRUE(free_bytes.ok()) << free_bytes.status().to_string();
  ASSERT_GT(*free_bytes, size) << "the tmpfs should hold a second checkpoint before the filler";
  // Leaves half a checkpoint free.
  std::ofstream(disk.sub("filler")) << std::string(*free_bytes - size / 2, 'f');
  const std::uint64_t free_before = *free_disk_bytes(disk.path());

  testing_util::FixedFreeSpaceFileSystem seems_empty(std::uint64_t{1} << 20);  // the check passes
  const std::string dir = disk.sub("policy-v2");
  const Status failed = save_policy_checkpoint(*model, initial, dir, 0, seems_empty);
  ASSERT_FALSE(failed.ok());
  EXPECT_TRUE(is_disk_space_shortage(failed)) << failed.to_string();
  EXPECT_NE(failed.message().find(dir + ".partial"), std::string::npos) << failed.to_string();
  EXPECT_FALSE(fs::exists(dir));
  EXPECT_FALSE(fs::exists(dir + ".partial"));
  EXPECT_EQ(*free_disk_bytes(disk.path()), free_before);

  EXPECT_EQ(tree_bytes(disk.sub("policy-v1")), size);
  auto earlier = load_qwen3_lm(disk.sub("policy-v1"));
  ASSERT_TRUE(earlier.ok()) << earlier.status().to_string();
}

}  // namespace
}  // namespace dice
