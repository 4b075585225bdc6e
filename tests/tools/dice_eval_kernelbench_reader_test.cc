// tools/dice-eval/kernelbench_reader.h on the small KernelBench-format checkout in
// dice_eval_fixtures/ and on bad folders made for each test.
#include "tools/dice-eval/kernelbench_reader.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "tests/support/temp_dir.h"

namespace dice::eval {
namespace {

namespace fs = std::filesystem;

const std::string kCheckout = std::string(DICE_EVAL_FIXTURES) + "/KernelBench";

const char kProblem[] =
    "import torch\nimport torch.nn as nn\n\nclass Model(nn.Module):\n    def forward(self, x):\n"
    "        return x\n\ndef get_inputs():\n    return [torch.randn(4)]\n\n"
    "def get_init_inputs():\n    return []\n";

void write(const std::string& path, const std::string& text) {
  fs::create_directories(fs::path(path).parent_path());
  std::ofstream(path) << text;
}

TEST(DiceEvalKernelBenchReaderTest, ReadsALevelFolderInProblemNumberOrder) {
  auto problems = read_kernelbench_folder(kCheckout + "/level1", "1");
  ASSERT_TRUE(problems.ok()) << problems.status().to_string();
  ASSERT_EQ(problems->size(), 3u);
  EXPECT_EQ((*problems)[0].id, "level1/1_ReLU");
  EXPECT_EQ((*problems)[1].id, "level1/2_Scale");
  EXPECT_EQ((*problems)[2].id, "level1/10_Tanh");  // 10 after 2: by number, not by name
  for (const Problem& p : *problems) {
    EXPECT_EQ(p.level, "1");
    EXPECT_EQ(p.kind, TaskKind::kEndToEnd);
    EXPECT_NE(p.pytorch_code.find("def get_init_inputs"), std::string::npos);
    EXPECT_TRUE(p.prefix.empty() && p.suffix.empty());
  }
  // level2/ holds a README.md beside its problems: only .py files are read.
  auto two = read_kernelbench_folder(kCheckout + "/level2/", "2");
  ASSERT_TRUE(two.ok()) << two.status().to_string();
  EXPECT_EQ(two->size(), 2u);
  EXPECT_EQ((*two)[0].id, "level2/1_Add_ReLU");
}

TEST(DiceEvalKernelBenchReaderTest, FindsLevelFoldersInTheCheckoutOrItsKernelBenchFolder) {
  const auto direct = find_level_folders(kCheckout);
  ASSERT_EQ(direct.size(), 2u);
  EXPECT_EQ(direct[0].first, "1");
  EXPECT_EQ(direct[1].first, "2");
  // The repository root of a KernelBench clone holds them under KernelBench/.
  const auto root = find_level_folders(DICE_EVAL_FIXTURES);
  ASSERT_EQ(root.size(), 2u);
  EXPECT_EQ(fs::path(root[1].second).filename(), "level2");
  EXPECT_TRUE(find_level_folders(kCheckout + "/level1").empty());
  EXPECT_EQ(level_of_folder(kCheckout + "/level2"), "2");
  EXPECT_EQ(level_of_folder(kCheckout + "/level2/"), "2");
  EXPECT_EQ(level_of_folder(kCheckout), "");
  EXPECT_EQ(level_of_folder("/x/level"), "");
}

TEST(DiceEvalKernelBenchReaderTest, NamesTheMissingDefinitions) {
  EXPECT_TRUE(check_kernelbench_source(kProblem, "p.py").ok());
  const Status candidate = check_kernelbench_source(
      "class ModelNew(nn.Module):\n    pass\ndef get_inputs():\n    return []\n", "c.py");
  ASSERT_EQ(candidate.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(candidate.message(),
            "c.py: not a KernelBench problem: no top-level `class Model`, `def get_init_inputs` "
            "(a problem defines class Model, get_inputs and get_init_inputs)");
  // Nested definitions are not the module's.
  const Status nested = check_kernelbench_source(
      "class Model:\n    def get_inputs(self):\n        pass\ndef get_init_inputs():\n  pass\n",
      "n.py");
  EXPECT_NE(nested.message().find("no top-level `def get_inputs`"), std::string::npos)
      << nested.message();
  EXPECT_NE(check_kernelbench_source(" \n\n", "e.py").message().find("the file is empty"),
            std::string::npos);
}

TEST(DiceEvalKernelBenchReaderTest, RefusesBadFoldersNamingTheFile) {
  testing_util::TempDir dir("dice-eval-kb");
  write(dir.sub("level1/1_Good.py"), kProblem);
  write(dir.sub("level1/helpers.py"), kProblem);
  auto bad_name = read_kernelbench_folder(dir.sub("level1"), "1");
  ASSERT_FALSE(bad_name.ok());
  EXPECT_EQ(bad_name.status().message(),
            dir.sub("level1/helpers.py") +
                ": not a KernelBench problem file name: expected <n>_<Name>.py (such as "
                "19_ReLU.py)");

  write(dir.sub("level2/1_A.py"), kProblem);
  write(dir.sub("level2/01_B.py"), kProblem);
  auto twice = read_kernelbench_folder(dir.sub("level2"), "2");
  ASSERT_FALSE(twice.ok());
  EXPECT_NE(twice.status().message().find("problem number 1 is also"), std::string::npos)
      << twice.status().message();

  write(dir.sub("level3/1_A.py"), "import torch\nprint('not a problem')\n");
  auto not_problem = read_kernelbench_folder(dir.sub("level3"), "3");
  ASSERT_FALSE(not_problem.ok());
  EXPECT_NE(
      not_problem.status().message().find(dir.sub("level3/1_A.py") + ": not a KernelBench problem"),
      std::string::npos)
      << not_problem.status().message();

  fs::create_directories(dir.sub("empty"));
  auto empty = read_kernelbench_folder(dir.sub("empty"), "1");
  ASSERT_FALSE(empty.ok());
  EXPECT_NE(empty.status().message().find("no KernelBench problem files"), std::string::npos);
  EXPECT_EQ(read_kernelbench_folder(dir.sub("missing"), "1").status().code(),
            StatusCode::kNotFound);
}

}  // namespace
}  // namespace dice::eval
