// dice-judge --resume: what an earlier --out file holds, and what is left to judge.
#include "reward/judge/judge_resume.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace dice {
namespace {

std::string write_file(const std::string& name, const std::string& text) {
  const auto path = std::filesystem::path(testing::TempDir()) / name;
  std::ofstream(path, std::ios::binary) << text;
  return path.string();
}

JudgeItem item(const std::string& id, const std::string& variant = "original") {
  JudgeItem i;
  i.id = id;
  i.variant = variant;
  return i;
}

TEST(JudgeResumeTest, CompleteLinesCountACutOneDoesNot) {
  const std::string first = "{\"id\": \"a\", \"variant\": \"original\", \"correct\": true}\n";
  const std::string second = "{\"id\": 7, \"variant\": \"off-by-one\", \"correct\": false}\n";
  const std::string path =
      write_file("judge_resume_cut.jsonl", first + "\n" + second + "{\"id\": \"c\", \"vari");
  auto so_far = read_judged(path);
  ASSERT_TRUE(so_far.ok()) << so_far.status().to_string();
  EXPECT_EQ(so_far->done.size(), 2u);
  EXPECT_EQ(so_far->complete_bytes, first.size() + 1 + second.size());
  const std::vector<JudgeItem> left = left_to_judge(
      {item("a"), item("a", "off-by-one"), item("7", "off-by-one"), item("c")}, *so_far);
  ASSERT_EQ(left.size(), 2u);
  EXPECT_EQ(left[0].id, "a");
  EXPECT_EQ(left[0].variant, "off-by-one");
  EXPECT_EQ(left[1].id, "c");  // its line was cut: judged again
}

TEST(JudgeResumeTest, AMissingFileHoldsNothing) {
  auto so_far = read_judged(testing::TempDir() + "no_such_judge_out.jsonl");
  ASSERT_TRUE(so_far.ok());
  EXPECT_TRUE(so_far->done.empty());
  EXPECT_EQ(so_far->complete_bytes, 0u);
}

TEST(JudgeResumeTest, ALineThatIsNoVerdictIsNamed) {
  const std::string path =
      write_file("judge_resume_bad.jsonl", "{\"id\": \"a\"}\nnot json\n{\"id\": \"b\"}\n");
  auto so_far = read_judged(path);
  ASSERT_FALSE(so_far.ok());
  EXPECT_NE(so_far.status().to_string().find("judge_resume_bad.jsonl: line 2"), std::string::npos)
      << so_far.status().to_string();
  auto no_id = read_judged(write_file("judge_resume_noid.jsonl", "{\"correct\": true}\n"));
  ASSERT_FALSE(no_id.ok());
  EXPECT_NE(no_id.status().to_string().find("line 1: not a verdict with an \"id\""),
            std::string::npos)
      << no_id.status().to_string();
}

}  // namespace
}  // namespace dice
