// The packed training layout: sequences side by side in one row that cannot see each other give
// each sequence exactly the hidden states it gets alone.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include "model/attention_masks.h"
#include "tests/model/model_test_util.h"

namespace dice {
namespace {

using testing_util::random_lm;
using testing_util::random_tokens;
using testing_util::tiny_config;

TEST(PackedTrainingTest, EachSequenceGetsWhatItGetsAlone) {
  torch::NoGradGuard no_grad;
  Qwen3LM lm = random_lm(tiny_config(), 4);
  const std::vector<int64_t> lengths = {8, 12, 4};
  std::vector<at::Tensor> x_0s, x_ts;
  for (int64_t n : lengths) {
    at::Tensor x0 = random_tokens(1, n, tiny_config());
    x_0s.push_back(x0);
    x_ts.push_back(x0.masked_fill(at::rand({1, n}) < 0.5, tiny_config().mask_token_id));
  }
  at::Tensor packed = lm->hidden_training_packed(at::cat(x_ts, 1), at::cat(x_0s, 1), lengths);
  ASSERT_EQ(packed.size(1), 24);
  int64_t offset = 0;
  for (std::size_t s = 0; s < lengths.size(); ++s) {
    at::Tensor alone = lm->hidden_training(x_ts[s], x_0s[s]);
    EXPECT_TRUE(at::allclose(packed.narrow(1, offset, lengths[s]), alone, 1e-5, 1e-6))
        << "sequence " << s;
    offset += lengths[s];
  }
}

TEST(PackedTrainingTest, MaskKeepsSequencesApartAndPositionsRestart) {
  at::Tensor mask = packed_training_mask({4, 8}, 4, at::kCPU).squeeze();  // [24, 24]
  // x_t query 5 (sequence 1, its block 0) sees x_t keys 4..7 and no x_0 key (no earlier block of
  // its own); x_0 query 12 + 9 (sequence 1, its block 1) sees x_0 keys 4..11 only.
  for (int64_t k = 0; k < 24; ++k) {
    EXPECT_EQ(mask[5][k].item<bool>(), k >= 4 && k < 8) << k;
    EXPECT_EQ(mask[12 + 9][k].item<bool>(), k >= 12 + 4 && k < 12 + 12) << k;
  }
  at::Tensor positions = packed_training_positions({4, 8}, at::kCPU);
  EXPECT_EQ(positions[4].item<int64_t>(), 0);
  EXPECT_EQ(positions[11].item<int64_t>(), 7);
  EXPECT_EQ(positions[12 + 4].item<int64_t>(), 0);
}

}  // namespace
}  // namespace dice
