// learner/train/training_flops.h against a hand count on a small shape.
#include "learner/train/training_flops.h"

#include <gtest/gtest.h>

namespace dice {
namespace {

// hidden 8, MLP 16, 2 layers, 2 query heads and 1 key/value head of width 4, vocabulary 10,
// block 4.
ModelConfig small() {
  ModelConfig c;
  c.vocab_size = 10;
  c.hidden_size = 8;
  c.intermediate_size = 16;
  c.num_hidden_layers = 2;
  c.num_attention_heads = 2;
  c.num_key_value_heads = 1;
  c.head_dim = 4;
  c.block_size = 4;
  return c;
}

TEST(TrainingFlopsTest, ParamsPerTokenAreTheProjectionsAndTheMlpOfEveryLayer) {
  // q 8x8, k and v 8x4 each, o 8x8: 192; SwiGLU 3 x 8 x 16: 384; two layers.
  EXPECT_DOUBLE_EQ(decoder_params_per_token(small()), 2 * (192 + 384));
}

TEST(TrainingFlopsTest, AForwardCountsBothHalvesTheMaskedPairsAndTheScoredHeads) {
  // Rows of 10 tokens a half: 3 blocks of 4, pairs 4^2 x 3 x 4 = 192 per layer.
  const double linear = 2 * 1152.0 * 2 * 10;   // both halves through every weight
  const double attention = 4 * 8.0 * 192 * 2;  // Q K^T and A V, 2 layers
  const double lm_head = 2 * 8.0 * 10 * 5;     // 5 scored positions in all
  EXPECT_DOUBLE_EQ(training_forward_flops(small(), 3, 10, 5), 3 * (linear + attention) + lm_head);
  EXPECT_DOUBLE_EQ(training_forward_flops(small(), 0, 10, 0), 0.0);
}

TEST(TrainingFlopsTest, ViewsBesideOneCleanCopyCountTheCleanCopyOnce) {
  // One view: the two-half layout. Four views: five halves instead of eight.
  EXPECT_DOUBLE_EQ(training_views_flops(small(), 10, 1), training_sequence_flops(small(), 10));
  EXPECT_DOUBLE_EQ(training_views_flops(small(), 10, 4),
                   4 * training_sequence_flops(small(), 10) * 5 / 8);
}

}  // namespace
}  // namespace dice
