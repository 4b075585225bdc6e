#include "model/attention_masks.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

namespace dice {
namespace {

TEST(AttentionMasksTest, BlockCausalFollowsDefinition) {
  const int64_t len = 7, bs = 3;
  at::Tensor mask = block_causal_mask(len, bs, at::kCPU);
  ASSERT_EQ(mask.sizes(), (at::IntArrayRef{1, 1, len, len}));
  ASSERT_EQ(mask.scalar_type(), at::kBool);
  auto m = mask.accessor<bool, 4>();
  for (int64_t i = 0; i < len; ++i) {
    for (int64_t j = 0; j < len; ++j) {
      EXPECT_EQ(m[0][0][i][j], j / bs <= i / bs) << i << "," << j;
    }
  }
}

TEST(AttentionMasksTest, TrainingMaskFollowsDefinition) {
  const int64_t len = 6, bs = 2;
  at::Tensor mask = training_mask(len, bs, at::kCPU);
  ASSERT_EQ(mask.sizes(), (at::IntArrayRef{1, 1, 2 * len, 2 * len}));
  auto m = mask.accessor<bool, 4>();
  for (int64_t q = 0; q < 2 * len; ++q) {
    for (int64_t k = 0; k < 2 * len; ++k) {
      const bool q_noisy = q < len, k_noisy = k < len;
      const int64_t qb = (q % len) / bs, kb = (k % len) / bs;
      bool want;
      if (q_noisy && k_noisy) {
        want = qb == kb;  // own noisy block only
      } else if (q_noisy) {
        want = kb < qb;  // clean blocks strictly before
      } else if (k_noisy) {
        want = false;  // clean never sees noisy
      } else {
        want = kb <= qb;  // clean is block-causal
      }
      EXPECT_EQ(m[0][0][q][k], want) << q << "," << k;
    }
  }
  at::Tensor pos = training_positions(len, at::kCPU);
  for (int64_t i = 0; i < 2 * len; ++i) EXPECT_EQ(pos[i].item<int64_t>(), i % len);
}

TEST(AttentionMasksTest, CachedChunkFollowsDefinition) {
  const std::vector<int64_t> lengths = {4, 0, 8};
  const std::vector<int64_t> valid = {3, 4, 0};
  const int64_t chunk = 4, bs = 4;
  at::Tensor mask = cached_chunk_mask(lengths, valid, chunk, bs, at::kCPU);
  const int64_t slots = 8 + chunk;
  ASSERT_EQ(mask.sizes(), (at::IntArrayRef{3, 1, chunk, slots}));
  auto m = mask.accessor<bool, 4>();
  for (int64_t b = 0; b < 3; ++b) {
    for (int64_t t = 0; t < chunk; ++t) {
      const int64_t p = lengths[b] + t;
      bool any = false;
      for (int64_t j = 0; j < slots; ++j) {
        const bool want = j / bs <= p / bs && (j < lengths[b] + valid[b] || j == p);
        EXPECT_EQ(m[b][0][t][j], want) << b << "," << t << "," << j;
        any = any || want;
      }
      EXPECT_TRUE(any) << "empty softmax row " << b << "," << t;
    }
  }
  // The device-tensor form with more key slots than needed: the same mask, then nothing visible.
  at::Tensor wide = cached_chunk_mask(at::tensor(lengths, at::kLong), at::tensor(valid, at::kLong),
                                      chunk, slots + 4, bs);
  ASSERT_EQ(wide.sizes(), (at::IntArrayRef{3, 1, chunk, slots + 4}));
  EXPECT_TRUE(wide.narrow(3, 0, slots).equal(mask));
  EXPECT_FALSE(wide.narrow(3, slots, 4).any().item<bool>());
}

}  // namespace
}  // namespace dice
