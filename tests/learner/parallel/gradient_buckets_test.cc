// plan_gradient_buckets: the order a backward pass fills the buckets, their sizes, and groups.
#include "learner/parallel/gradient_buckets.h"

#include <gtest/gtest.h>

#include <vector>

namespace dice {
namespace {

std::vector<BucketParam> floats(const std::vector<std::int64_t>& numels, int group = 0) {
  std::vector<BucketParam> out;
  for (std::int64_t n : numels) out.push_back({n, 4, group});
  return out;
}

TEST(GradientBucketsTest, LastParametersComeFirstAndTheFirstBucketIsSmall) {
  BucketPlanOptions o;
  o.first_bucket_bytes = 16;  // 4 floats
  o.bucket_bytes = 40;        // 10 floats
  const auto plan = plan_gradient_buckets(floats({3, 3, 3, 3, 2, 2}), o);
  ASSERT_EQ(plan.size(), 3u);
  EXPECT_EQ(plan[0].params, (std::vector<std::size_t>{5, 4}));  // 4 floats: the first cap
  EXPECT_EQ(plan[0].offsets, (std::vector<std::int64_t>{0, 2}));
  EXPECT_EQ(plan[0].numel, 4);
  EXPECT_EQ(plan[1].params, (std::vector<std::size_t>{3, 2, 1}));  // 9 floats; a 4th would pass 10
  EXPECT_EQ(plan[1].offsets, (std::vector<std::int64_t>{0, 3, 6}));
  EXPECT_EQ(plan[2].params, (std::vector<std::size_t>{0}));
}

TEST(GradientBucketsTest, ALargeParameterHasABucketOfItsOwn) {
  BucketPlanOptions o;
  o.first_bucket_bytes = 8;
  o.bucket_bytes = 40;
  const auto plan = plan_gradient_buckets(floats({1, 100, 1}), o);
  ASSERT_EQ(plan.size(), 3u);
  EXPECT_EQ(plan[0].params, (std::vector<std::size_t>{2}));
  EXPECT_EQ(plan[1].params, (std::vector<std::size_t>{1}));
  EXPECT_EQ(plan[1].numel, 100);
  EXPECT_EQ(plan[2].params, (std::vector<std::size_t>{0}));
}

TEST(GradientBucketsTest, ForShardsEveryBucketIsPaddedToEqualChunks) {
  BucketPlanOptions o;
  o.first_bucket_bytes = 16;
  o.bucket_bytes = 40;
  o.chunks = 3;  // three ranks
  const auto plan = plan_gradient_buckets(floats({3, 3, 3, 3, 2, 2}), o);
  ASSERT_EQ(plan.size(), 3u);
  EXPECT_EQ(plan[0].numel, 6);  // 4 elements, 2 zeros: chunks of 2, the last all padding
  EXPECT_EQ(plan[0].padding, 2);
  EXPECT_EQ(plan[1].numel, 9);  // 9 elements: no padding
  EXPECT_EQ(plan[1].padding, 0);
  EXPECT_EQ(plan[2].numel, 3);
  EXPECT_EQ(plan[2].offsets, (std::vector<std::int64_t>{0}));  // the padding comes last
}

TEST(GradientBucketsTest, GroupsNeverShareABucketAndEveryParameterIsInExactlyOne) {
  std::vector<BucketParam> params = floats({5, 5, 5, 5});
  params[1].group = 1;
  params[3].group = 1;
  params[3].element_bytes = 2;
  params.push_back({0, 4, 0});  // empty: in none
  BucketPlanOptions o;
  o.first_bucket_bytes = 1000;
  o.bucket_bytes = 1000;
  const auto plan = plan_gradient_buckets(params, o);
  std::vector<int> seen(params.size(), 0);
  for (const GradientBucket& b : plan) {
    std::int64_t expected_offset = 0;
    for (std::size_t s = 0; s < b.params.size(); ++s) {
      EXPECT_EQ(params[b.params[s]].group, b.group);
      EXPECT_EQ(b.offsets[s], expected_offset);
      expected_offset += params[b.params[s]].numel;
      ++seen[b.params[s]];
    }
    EXPECT_EQ(b.numel, expected_offset);
  }
  EXPECT_EQ(seen, (std::vector<int>{1, 1, 1, 1, 0}));
  EXPECT_EQ(plan.size(), 2u);
}

}  // namespace
}  // namespace dice
