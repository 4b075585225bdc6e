// dice-model tokenizer as a process: the pruned tokenizer and its vocab_map.json are written
// whole or not at all. A run reads them later, so a disk that fills midway must end the command
// with an error naming the file, never leave a short tokenizer behind an exit status of 0.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "common/remove_tree.h"
#include "tests/support/shell_command.h"
#include "tests/support/small_tmpfs.h"

namespace {

namespace fs = std::filesystem;
using dice::testing_util::run_command;
using dice::testing_util::SmallTmpfs;

constexpr char kQwenTokenizer[] = DICE_QWEN_TOKENIZER;

class DiceModelTokenizerCliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!fs::exists(kQwenTokenizer)) {
      GTEST_SKIP() << "no Qwen3 tokenizer.json at " << kQwenTokenizer
                   << " (tools/setup installs it)";
    }
    dir_ = fs::temp_directory_path() / ("dice-model-cli-" + std::to_string(::getpid()));
    fs::create_directories(dir_ / "corpus");
    std::ofstream(dir_ / "corpus" / "tasks.json")
        << R"([{"text": "def forward(self, x):\n    return torch.relu(x) + 1"}])";
  }
  void TearDown() override { dice::remove_tree(dir_).ignore(); }
  dice::testing_util::CommandResult prune_into(const fs::path& out) const {
    return run_command(std::string(DICE_MODEL_EXE) + " tokenizer --source " + kQwenTokenizer +
                       " --corpus " + (dir_ / "corpus").string() + " --out " + out.string());
  }

  fs::path dir_;
};

TEST_F(DiceModelTokenizerCliTest, WritesTheTokenizerAndItsVocabularyMap) {
  auto done = prune_into(dir_ / "tok" / "tokenizer.json");
  ASSERT_EQ(done.rc, 0) << done.output;
  EXPECT_GT(fs::file_size(dir_ / "tok" / "tokenizer.json"), 0u);
  EXPECT_NE(dice::testing_util::read_text(dir_ / "tok" / "vocab_map.json").find("source_id_of"),
            std::string::npos);
}

TEST_F(DiceModelTokenizerCliTest, ADiskTooSmallForTheTokenizerIsAnErrorAndLeavesNoShortFile) {
  // One page: the pruned tokenizer of this corpus is a little over 4 KiB.
  SmallTmpfs disk(4);
  if (!disk.mounted()) GTEST_SKIP() << disk.skip_reason();
  const fs::path out = fs::path(disk.path()) / "tok" / "tokenizer.json";
  auto done = prune_into(out);
  EXPECT_EQ(done.rc, 1) << done.output;
  EXPECT_NE(done.output.find(out.string()), std::string::npos) << done.output;
  EXPECT_FALSE(fs::exists(out)) << "a short tokenizer of " << fs::file_size(out) << " bytes";
  EXPECT_FALSE(fs::exists(out.parent_path() / "vocab_map.json"));
}

}  // namespace
