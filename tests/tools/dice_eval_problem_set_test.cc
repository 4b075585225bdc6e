// tools/dice-eval/problem_set.h: which form a --problems path is, the filters, and the errors
// for paths that are no problem set.
#include "tools/dice-eval/problem_set.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "tests/support/temp_dir.h"

namespace dice::eval {
namespace {

namespace fs = std::filesystem;

const std::string kFixtures = DICE_EVAL_FIXTURES;

std::vector<std::string> ids(const ProblemSet& set) {
  std::vector<std::string> out;
  for (const Problem& p : set.problems) out.push_back(p.id);
  return out;
}

TEST(DiceEvalProblemSetTest, AKernelBenchCheckoutGivesEveryLevel) {
  for (const std::string& path : {kFixtures, kFixtures + "/KernelBench"}) {
    auto set = read_problem_set(path, {});
    ASSERT_TRUE(set.ok()) << set.status().to_string();
    EXPECT_EQ(set->form, "kernelbench");
    EXPECT_EQ(ids(*set),
              (std::vector<std::string>{"level1/1_ReLU", "level1/2_Scale", "level1/10_Tanh",
                                        "level2/1_Add_ReLU", "level2/2_Scale_Tanh"}));
  }
  ProblemSetOptions options;
  options.levels = {"02"};
  auto two = read_problem_set(kFixtures, options);
  ASSERT_TRUE(two.ok()) << two.status().to_string();
  EXPECT_EQ(two->problems.size(), 2u);
  options = {};
  options.per_level = 1;
  auto first = read_problem_set(kFixtures, options);
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(ids(*first), (std::vector<std::string>{"level1/1_ReLU", "level2/1_Add_ReLU"}));
}

TEST(DiceEvalProblemSetTest, AFolderOfProblemsTakesItsLevelFromItsNameOrTheFlag) {
  auto named = read_problem_set(kFixtures + "/KernelBench/level2", {});
  ASSERT_TRUE(named.ok()) << named.status().to_string();
  EXPECT_EQ(named->form, "kernelbench-folder");
  EXPECT_EQ(named->problems[0].level, "2");

  testing_util::TempDir dir("dice-eval-set");
  fs::copy(kFixtures + "/KernelBench/level1", dir.sub("mine"));
  auto unnamed = read_problem_set(dir.sub("mine"), {});
  ASSERT_FALSE(unnamed.ok());
  EXPECT_EQ(unnamed.status().message(),
            "problem set " + dir.sub("mine") +
                ": the folder is not named level<N>, so its level is unknown: pass --level N");
  ProblemSetOptions options;
  options.level = "3";
  auto flagged = read_problem_set(dir.sub("mine"), options);
  ASSERT_TRUE(flagged.ok()) << flagged.status().to_string();
  EXPECT_EQ(flagged->problems.size(), 3u);
  EXPECT_EQ(flagged->problems[0].level, "3");
  EXPECT_EQ(flagged->problems[0].id, "mine/1_ReLU");
}

TEST(DiceEvalProblemSetTest, ACurriculumFolderGivesItsHeldOutSplit) {
  testing_util::TempDir dir("dice-eval-heldout");
  std::ofstream(dir.sub("heldout_e2e.json"))
      << R"([{"id": "unary-1-1", "level": "1", "pytorch_code": "a"},
             {"id": "chain-2-1", "level": "2", "pytorch_code": "b",
              "shape_variants": [{"batch_size": 3}]}])";
  std::ofstream(dir.sub("heldout_infill.json"))
      << R"([{"id": "unary-1-2", "level": "1", "pytorch_code": "c", "prefix": "p",
              "suffix": "s", "middle": "m", "cuda_code": "pms"}])";
  std::ofstream(dir.sub("rl_e2e.json")) << "[]";
  auto set = read_problem_set(dir.path(), {});
  ASSERT_TRUE(set.ok()) << set.status().to_string();
  EXPECT_EQ(set->form, "heldout");
  ASSERT_EQ(set->problems.size(), 3u);
  EXPECT_EQ(set->problems[0].kind, TaskKind::kInfill);  // infill first
  EXPECT_EQ(set->problems[1].kind, TaskKind::kEndToEnd);
  EXPECT_EQ(boost::json::serialize(learner_task(set->problems[2]).at("shape_variants")),
            R"([{"batch_size":3}])");

  // An id in both files: the set's ids must be unique (the reward log keys verdicts by them).
  std::ofstream(dir.sub("heldout_infill.json"))
      << R"([{"id": "unary-1-1", "pytorch_code": "c", "prefix": "p", "suffix": "s"}])";
  auto twice = read_problem_set(dir.path(), {});
  ASSERT_FALSE(twice.ok());
  EXPECT_NE(twice.status().message().find("task id \"unary-1-1\" is also used at"),
            std::string::npos)
      << twice.status().message();
}

TEST(DiceEvalProblemSetTest, PathsThatAreNoProblemSetAreNamed) {
  auto missing = read_problem_set("/no/such/KernelBench", {});
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(missing.status().message(), "problem set /no/such/KernelBench: no such file or folder");

  testing_util::TempDir dir("dice-eval-none");
  std::ofstream(dir.sub("notes.txt")) << "hello";
  auto none = read_problem_set(dir.path(), {});
  ASSERT_EQ(none.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(none.status().message().find(": not a problem set: expected level<N>/"),
            std::string::npos);

  ProblemSetOptions options;
  options.levels = {"7"};
  auto filtered = read_problem_set(kFixtures, options);
  ASSERT_FALSE(filtered.ok());
  EXPECT_NE(filtered.status().message().find("none of its 5 problems is left"), std::string::npos);
  options = {};
  options.level = "one";
  EXPECT_EQ(read_problem_set(kFixtures, options).status().message(),
            "--level 'one': expected 0..255");
}

}  // namespace
}  // namespace dice::eval
