// A policy checkpoint reaches the disk whole before it takes its name: every file of
// `dir`.partial (the weights, and the tokenizer copied beside them, whose copy does not sync) is
// fsynced before the rename, and the folder holding it after, so the checkpoint a resume folder
// names survives a power loss.
#include "learner/policy_checkpoint.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "common/remove_tree.h"
#include "model/weights.h"
#include "tests/common/recording_file_system.h"
#include "tests/model/model_test_util.h"

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
  Status saved = save_policy_checkpoint(*model, (base / "initial").string(), dir, recorder);
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

}  // namespace
}  // namespace dice
