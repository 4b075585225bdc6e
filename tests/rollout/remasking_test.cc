// The batched remasking rules and the token draw on hand-made inputs.
#include "rollout/remasking.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "rollout/token_draw.h"

namespace dice {
namespace {

at::Tensor bools(const std::vector<std::vector<int>>& rows) {
  std::vector<int64_t> flat;
  for (const auto& r : rows) flat.insert(flat.end(), r.begin(), r.end());
  return at::tensor(flat, at::kLong).view({static_cast<int64_t>(rows.size()), -1}).to(at::kBool);
}

at::Tensor floats(const std::vector<std::vector<double>>& rows) {
  std::vector<double> flat;
  for (const auto& r : rows) flat.insert(flat.end(), r.begin(), r.end());
  return at::tensor(flat, at::kDouble).view({static_cast<int64_t>(rows.size()), -1}).to(at::kFloat);
}

at::Tensor longs(const std::vector<int64_t>& v) {
  return at::tensor(v, at::kLong);
}

TEST(RemaskingTest, QuotaSpreadsTheRemainderOverTheFirstSteps) {
  // 4 masks over 4 steps: 1 each; 3 masks over 4: 1,1,1,0; 6 masks over 4: 2,2,1,1.
  at::Tensor m = longs({4, 4, 4, 4, 3, 3, 3, 3, 6, 6, 6, 6});
  at::Tensor k = longs({0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3});
  at::Tensor q = step_quota(m, k, 4);
  EXPECT_TRUE(at::equal(q, longs({1, 1, 1, 1, 1, 1, 1, 0, 2, 2, 1, 1})));
}

TEST(RemaskingTest, StaticCommitsTheMostConfidentTiesLeftmost) {
  at::Tensor masked = bools({{1, 1, 1, 1}, {0, 1, 1, 1}, {1, 1, 0, 1}});
  at::Tensor conf = floats({{0.1, 0.5, 0.3, 0.5}, {0.9, 0.2, 0.4, 0.3}, {0.2, 0.2, 0.9, 0.2}});
  at::Tensor got = select_commits(Remasking::LOW_CONFIDENCE_STATIC, masked, conf, at::Tensor(),
                                  longs({2, 1, 2}), 0.9);
  // Row 0: 0.5 at positions 1 and 3 (tie: both, since q = 2); row 1: the committed 0.9 at
  // position 0 is ignored; row 2: ties at 0.2, the two leftmost masked positions.
  EXPECT_TRUE(at::equal(got, bools({{0, 1, 0, 1}, {0, 0, 1, 0}, {1, 1, 0, 0}})));
}

TEST(RemaskingTest, DynamicTakesAllAboveThresholdOrTheTopQ) {
  at::Tensor masked = bools({{1, 1, 1, 1}, {1, 1, 1, 1}, {1, 1, 0, 0}});
  at::Tensor conf = floats({{0.95, 0.2, 0.9, 0.91}, {0.1, 0.95, 0.3, 0.2}, {0.5, 0.4, 1, 1}});
  at::Tensor got = select_commits(Remasking::LOW_CONFIDENCE_DYNAMIC, masked, conf, at::Tensor(),
                                  longs({1, 2, 5}), 0.9);
  // Row 0: three above 0.9 (>= q = 1); row 1: one above, fewer than q = 2, so the top 2; row 2:
  // the quota is capped by the two masks left.
  EXPECT_TRUE(at::equal(got, bools({{1, 0, 1, 1}, {0, 1, 1, 0}, {1, 1, 0, 0}})));
}

TEST(RemaskingTest, SequentialGoesLeftToRightAndAtLeastOne) {
  at::Tensor masked = bools({{0, 1, 1, 1}, {1, 1, 1, 1}, {0, 0, 0, 0}});
  at::Tensor conf = floats({{1, 0.1, 0.9, 0.9}, {0.1, 0.1, 0.9, 0.9}, {1, 1, 1, 1}});
  at::Tensor got =
      select_commits(Remasking::SEQUENTIAL, masked, conf, at::Tensor(), longs({2, 0, 1}), 0.9);
  EXPECT_TRUE(at::equal(got, bools({{0, 1, 1, 0}, {1, 0, 0, 0}, {0, 0, 0, 0}})));
}

TEST(RemaskingTest, EntropyBoundedSumsTheLowestEntropies) {
  at::Tensor masked = bools({{1, 1, 1, 1}, {1, 1, 1, 1}, {0, 1, 1, 1}});
  at::Tensor ent = floats({{0.1, 0.5, 0.2, 0.3}, {0.8, 0.7, 0.9, 0.9}, {0.0, 0.3, 0.2, 0.3}});
  at::Tensor conf = at::zeros({3, 4});
  at::Tensor got =
      select_commits(Remasking::ENTROPY_BOUNDED, masked, conf, ent, longs({1, 1, 2}), 0.6);
  // Row 0: 0.1 + 0.2 + 0.3 = 0.6 <= 0.6, adding 0.5 exceeds; row 1: even the lowest exceeds,
  // so the quota (1); row 2: 0.2 + 0.3 (leftmost of the tied 0.3s) = 0.5, the committed
  // position 0 does not count.
  EXPECT_TRUE(at::equal(got, bools({{1, 0, 1, 1}, {0, 1, 0, 0}, {0, 1, 1, 0}})));
}

TEST(TokenDrawTest, GreedyFiltersAndReportsThePolicy) {
  at::Tensor logits = floats({{1.0, 3.0, 2.0, 0.0, 5.0}, {0.0, 0.0, 0.0, 0.0, 0.0}});
  SamplingOptions s;
  s.temperature = 0.0;
  s.top_k = 2;
  s.top_p = 1.0;
  at::Generator gen = at::detail::createCPUGenerator(1);
  TokenDraw d = draw_tokens(logits, s, /*banned_token=*/4, /*with_entropy=*/true, gen);
  // Row 0: token 4 is banned, so top-2 of the rest is {1: 3.0, 2: 2.0}; row 1: all tie, banned
  // 4, top_k keeps ties with the 2nd value (4 tokens), argmax is the first.
  EXPECT_TRUE(at::equal(d.tokens, longs({1, 0})));
  const double p1 = 1.0 / (1.0 + std::exp(-1.0));
  EXPECT_NEAR(d.confidence[0].item<double>(), p1, 1e-6);
  EXPECT_NEAR(d.log_probs[0].item<double>(), std::log(p1), 1e-6);
  EXPECT_NEAR(d.entropy[0].item<double>(), -(p1 * std::log(p1) + (1 - p1) * std::log(1 - p1)),
              1e-6);
  EXPECT_NEAR(d.confidence[1].item<double>(), 0.25, 1e-6);
  EXPECT_NEAR(d.entropy[1].item<double>(), std::log(4.0), 1e-6);
  // The caller's logits are left as they were.
  EXPECT_EQ(logits[0][4].item<double>(), 5.0);
}

TEST(TokenDrawTest, TopPKeepsTheTokenThatCrossesTheMass) {
  // Probabilities 0.5, 0.3, 0.2: top_p 0.6 keeps the first two (mass before the second is 0.5).
  at::Tensor logits = at::log(floats({{0.2, 0.5, 0.3}}));
  SamplingOptions s;
  s.temperature = 1.0;
  s.top_p = 0.6;
  at::Generator gen = at::detail::createCPUGenerator(5);
  int counts[3] = {0, 0, 0};
  at::Tensor many = logits.expand({4000, 3});
  TokenDraw d = draw_tokens(many, s, -1, false, gen);
  for (int64_t i = 0; i < 4000; ++i) ++counts[d.tokens[i].item<int64_t>()];
  EXPECT_EQ(counts[0], 0);
  // 0.5 / 0.8 = 0.625 of the draws on token 1 (binomial sd ~ 0.008).
  EXPECT_NEAR(counts[1] / 4000.0, 0.625, 0.04);
  // Log-probs are those of the renormalised distribution.
  at::Tensor on_one = d.tokens.eq(1);
  EXPECT_NEAR(d.log_probs.masked_select(on_one).mean().item<double>(), std::log(0.625), 1e-5);
}

}  // namespace
}  // namespace dice
