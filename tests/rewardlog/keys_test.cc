#include "rewardlog/keys.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

namespace dice::rewardlog {
namespace {

using namespace std::string_literals;

TEST(RewardLogKeysTest, LayoutMatchesTheDocumentedBytes) {
  EXPECT_EQ(run_key("r1"), "r1");
  EXPECT_EQ(step_key("r1", 0x0102), "r1\0"s + "\0\0\0\0\0\0\x01\x02"s);
  EXPECT_EQ(candidate_key("r1", 3, "t9", 0x0a0b),
            "r1\0"s + "\0\0\0\0\0\0\0\x03"s + "t9\0"s + "\0\0\x0a\x0b"s);
  EXPECT_EQ(metric_key("r1", "loss", 7), "r1\0loss\0"s + "\0\0\0\0\0\0\0\x07"s);
  EXPECT_EQ(kernel_key("a9993e"), "a9993e");
  EXPECT_EQ(task_key("r1", "t9"), "r1\0t9"s);
}

TEST(RewardLogKeysTest, BigEndianStepsSortNumerically) {
  const std::vector<uint64_t> steps = {0, 1, 255, 256, 65535, 1ull << 32, (1ull << 63) + 5};
  std::vector<std::string> keys;
  for (uint64_t s : steps) keys.push_back(step_key("run", s));
  EXPECT_TRUE(std::is_sorted(keys.begin(), keys.end()));
  std::vector<std::string> candidates = {candidate_key("run", 2, "a", 256),
                                         candidate_key("run", 1, "b", 0),
                                         candidate_key("run", 2, "a", 1)};
  std::sort(candidates.begin(), candidates.end());
  EXPECT_EQ(parse_key(Family::kCandidates, candidates[0])->step, 1u);
  EXPECT_EQ(parse_key(Family::kCandidates, candidates[1])->sample, 1u);
  EXPECT_EQ(parse_key(Family::kCandidates, candidates[2])->sample, 256u);
}

TEST(RewardLogKeysTest, RunPrefixDoesNotMatchLongerRunIds) {
  const std::string prefix = run_prefix("r1");
  const std::string other = step_key("r10", 0);
  EXPECT_NE(other.compare(0, prefix.size(), prefix), 0);
  const std::string own = step_key("r1", 99);
  EXPECT_EQ(own.compare(0, prefix.size(), prefix), 0);
}

TEST(RewardLogKeysTest, ParseInvertsBuild) {
  auto c = parse_key(Family::kCandidates, candidate_key("run-7", 42, "task/17", 5));
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->run_id, "run-7");
  EXPECT_EQ(c->step, 42u);
  EXPECT_EQ(c->task_id, "task/17");
  EXPECT_EQ(c->sample, 5u);
  auto m = parse_key(Family::kMetrics, metric_key("run-7", "reward/correct_rate", 9));
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(m->name, "reward/correct_rate");
  EXPECT_EQ(m->step, 9u);
  auto s = parse_key(Family::kSteps, step_key("run-7", 1ull << 40));
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->step, 1ull << 40);
  auto t = parse_key(Family::kTasks, task_key("run-7", "task/17"));
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ(t->run_id, "run-7");
  EXPECT_EQ(t->task_id, "task/17");
}

TEST(RewardLogKeysTest, ParseRejectsMalformedKeys) {
  EXPECT_FALSE(parse_key(Family::kSteps, "run").has_value());                        // no separator
  EXPECT_FALSE(parse_key(Family::kSteps, "run\0\x01\x02"s).has_value());             // short step
  EXPECT_FALSE(parse_key(Family::kSteps, "\0"s + std::string(8, 'x')).has_value());  // empty run
  EXPECT_FALSE(parse_key(Family::kCandidates, step_key("run", 1)).has_value());
  EXPECT_FALSE(parse_key(Family::kKernels, "ABC").has_value());  // not lowercase hex
  EXPECT_FALSE(parse_key(Family::kRuns, "").has_value());
  EXPECT_FALSE(parse_key(Family::kTasks, "run\0"s).has_value());  // empty task id
  EXPECT_FALSE(parse_key(Family::kTasks, "run\0t\0x"s).has_value());
}

TEST(RewardLogKeysTest, DescribeKeyNamesThePartsOrEscapesTheBytes) {
  EXPECT_EQ(describe_key(Family::kCandidates, candidate_key("run-7", 3, "17", 2)),
            "candidates/run-7/step=3/task=17/sample=2");
  EXPECT_EQ(describe_key(Family::kMetrics, metric_key("r", "loss", 1)), "metrics/r/loss/step=1");
  EXPECT_EQ(describe_key(Family::kTasks, task_key("r", "17")), "tasks/r/task=17");
  EXPECT_EQ(describe_key(Family::kSteps, "run\0\x01"s), "steps/<unparseable key run\\x00\\x01>");
}

TEST(RewardLogKeysTest, KeyTextMustBeNonEmptyWithoutNul) {
  EXPECT_TRUE(check_key_text("runId", "run-1").ok());
  EXPECT_EQ(check_key_text("runId", "").code(), StatusCode::kInvalidArgument);
  const Status nul = check_key_text("taskId", "a\0b"s);
  EXPECT_EQ(nul.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(nul.message().find("taskId"), std::string::npos);
  EXPECT_TRUE(check_source_hash("0123456789abcdef").ok());
  EXPECT_FALSE(check_source_hash("0123456789ABCDEF").ok());
  EXPECT_FALSE(check_source_hash("").ok());
}

}  // namespace
}  // namespace dice::rewardlog
