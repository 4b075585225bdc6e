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

TEST(RemaskingTest, RandomCommitsTheQuotaAmongTheMasksOnly) {
  at::Generator gen = at::detail::createCPUGenerator(7);
  at::Tensor masked = bools({{1, 1, 1, 1}, {0, 1, 0, 1}, {0, 0, 0, 0}, {1, 0, 1, 1}, {1, 1, 1, 1}});
  at::Tensor conf = at::zeros({5, 4});
  at::Tensor quota = longs({2, 0, 1, 5, 1});
  // The quota is raised to 1 and capped by the masks left: 2, 1, 0, 3, 1.
  const std::vector<int64_t> want = {2, 1, 0, 3, 1};
  for (int trial = 0; trial < 50; ++trial) {
    at::Tensor got =
        select_commits(Remasking::RANDOM, masked, conf, at::Tensor(), quota, 0.9, &gen);
    EXPECT_TRUE(at::equal(got & masked.logical_not(), at::zeros_like(got))) << got;
    for (int64_t r = 0; r < 5; ++r) {
      EXPECT_EQ(got[r].sum().item<int64_t>(), want[static_cast<size_t>(r)]) << "row " << r;
    }
  }
}

TEST(RemaskingTest, RandomIsSeededAndBlindToConfidenceAndEntropy) {
  at::Tensor masked = at::ones({64, 4}, at::kBool);
  at::Tensor quota = at::ones({64}, at::kLong);
  at::Tensor confident = at::rand({64, 4});
  at::Tensor unsure = 1 - confident;  // the opposite ranking
  at::Generator a = at::detail::createCPUGenerator(3);
  at::Generator b = at::detail::createCPUGenerator(3);
  at::Generator c = at::detail::createCPUGenerator(4);
  at::Tensor from_a =
      select_commits(Remasking::RANDOM, masked, confident, confident, quota, 0.9, &a);
  at::Tensor from_b = select_commits(Remasking::RANDOM, masked, unsure, unsure, quota, 0.9, &b);
  at::Tensor from_c =
      select_commits(Remasking::RANDOM, masked, confident, confident, quota, 0.9, &c);
  // The same seed chooses the same positions whatever the confidences; another seed does not
  // (64 rows of 4 positions agreeing by chance: 4^-64).
  EXPECT_TRUE(at::equal(from_a, from_b));
  EXPECT_FALSE(at::equal(from_a, from_c));
}

TEST(RemaskingTest, RandomChoosesUniformly) {
  // 3 masks of 4 (position 1 committed), quota 2: each of the 3 pairs a third of the time.
  const int64_t rows = 6000;
  at::Tensor masked = bools({{1, 0, 1, 1}}).expand({rows, 4}).contiguous();
  at::Generator gen = at::detail::createCPUGenerator(9);
  at::Tensor got = select_commits(Remasking::RANDOM, masked, at::zeros({rows, 4}), at::Tensor(),
                                  at::full({rows}, 2, at::kLong), 0.9, &gen);
  // Each row leaves out one of positions 0, 2, 3; binomial sd of a share ~0.006.
  at::Tensor left_out = (masked & got.logical_not()).to(at::kFloat).mean(0);
  EXPECT_EQ(left_out[1].item<double>(), 0.0);
  for (int64_t i : {0, 2, 3}) EXPECT_NEAR(left_out[i].item<double>(), 1.0 / 3, 0.03) << i;
}

// Share of committed tokens that are token 1 when a block of 4 positions, each drawn from
// softmax(logits) = (0.8, 0.2) at every step whatever the context, is decoded in 4 steps by
// `strategy`, for `rows` blocks side by side.
double committed_share_of_the_unlikely_token(Remasking strategy, int64_t rows) {
  at::Tensor logits = at::log(floats({{0.8, 0.2}})).view({1, 1, 2}).expand({rows, 4, 2});
  SamplingOptions s;
  s.temperature = 1.0;
  at::Generator gen = at::detail::createCPUGenerator(21);
  at::Tensor masked = at::ones({rows, 4}, at::kBool);
  at::Tensor tokens = at::full({rows, 4}, -1, at::kLong);
  at::Tensor start = at::full({rows}, 4, at::kLong);
  for (int64_t k = 0; k < 4; ++k) {
    TokenDraw d = draw_tokens(logits, s, -1, /*with_entropy=*/true, gen);
    at::Tensor quota = step_quota(start, at::full({rows}, k, at::kLong), 4);
    at::Tensor commit =
        select_commits(strategy, masked, d.confidence, d.entropy, quota, /*threshold=*/0.9, &gen);
    tokens = at::where(commit, d.tokens, tokens);
    masked = masked & commit.logical_not();
  }
  EXPECT_FALSE(masked.any().item<bool>());
  return tokens.eq(1).to(at::kDouble).mean().item<double>();
}

TEST(RemaskingTest, FaithfulStrategiesCommitDrawsDistributedAsTheSoftmax) {
  // 16,000 committed tokens: the share's sd is ~0.003 when they follow the softmax (0.2).
  for (Remasking r : {Remasking::RANDOM, Remasking::SEQUENTIAL, Remasking::ENTROPY_BOUNDED}) {
    EXPECT_NEAR(committed_share_of_the_unlikely_token(r, 4000), 0.2, 0.015) << static_cast<int>(r);
  }
  // Ranking by the drawn token's probability keeps the unlikely draw only when every position
  // left drew it: far below the softmax's 0.2.
  for (Remasking r : {Remasking::LOW_CONFIDENCE_STATIC, Remasking::LOW_CONFIDENCE_DYNAMIC}) {
    EXPECT_LT(committed_share_of_the_unlikely_token(r, 4000), 0.12) << static_cast<int>(r);
  }
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
