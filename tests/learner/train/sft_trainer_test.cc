// SftTrainer on the tiny random model (CPU): the noise follows REFERENCE section 2, and training
// on a few samples lowers their loss.
#include "learner/train/sft_trainer.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <optional>
#include <random>
#include <vector>

#include "learner/train/training_flops.h"
#include "tests/model/model_test_util.h"

namespace dice {
namespace {

using testing_util::random_lm;
using testing_util::tiny_config;

SftSample sample(std::int64_t first, std::int64_t response_length = 10) {
  SftSample s;
  s.prompt = {1, 2, 3, 4, 5};
  for (std::int64_t i = 0; i < response_length; ++i) s.response.push_back(first + i);
  return s;
}

TEST(SftNoiseTest, OnlyResponseTokensAreMaskedAtRateP) {
  std::mt19937_64 rng(3);
  const SftSample s = sample(10);
  std::int64_t masked = 0;
  for (int i = 0; i < 2000; ++i) {
    SftNoised n = sft_noise(s, 0.4, 4, 63, rng);
    EXPECT_NEAR(n.p, (1 - 1e-3) * 0.4 + 1e-3, 1e-12);
    ASSERT_EQ(n.x_0.size(), 16u);  // 15 tokens padded to whole blocks of 4
    EXPECT_EQ(n.x_0[15], 63);
    for (std::size_t j = 0; j < 5; ++j) ASSERT_EQ(n.x_t[j], s.prompt[j]) << "prompt masked";
    for (std::int64_t pos : n.masked) {
      ASSERT_GE(pos, 5);
      ASSERT_LT(pos, 15);
      ASSERT_EQ(n.x_t[static_cast<std::size_t>(pos)], 63);
    }
    masked += static_cast<std::int64_t>(n.masked.size());
  }
  EXPECT_NEAR(static_cast<double>(masked) / (2000.0 * 10.0), 0.4, 0.02);
  // t = 0 still masks now and then: p never drops below 1e-3.
  EXPECT_NEAR(sft_noise(s, 0.0, 4, 63, rng).p, 1e-3, 1e-12);
}

TEST(SftTrainerTest, TrainingLowersTheLossOfItsSamples) {
  Qwen3LM model = random_lm(tiny_config(), 9);
  SftTrainerOptions o;
  o.optimizer.lr = 3e-3;
  o.seed = 5;
  auto trainer = SftTrainer::create(model, o);
  ASSERT_TRUE(trainer.ok()) << trainer.status().to_string();
  const SftSample a = sample(10), b = sample(30);
  std::vector<const SftSample*> batch = {&a, &b};
  double first = 0, last = 0;
  for (int step = 0; step < 60; ++step) {
    auto stats = (*trainer)->step(batch, o.optimizer.lr);
    ASSERT_TRUE(stats.ok()) << stats.status().to_string();
    EXPECT_EQ(stats->sequences, 2);
    ASSERT_TRUE(std::isfinite(stats->loss));
    if (step < 10) first += stats->loss;
    if (step >= 50) last += stats->loss;
  }
  EXPECT_LT(last, 0.5 * first) << "the loss of 10 steps: first " << first << ", last " << last;
}

// The step's reported loss is REFERENCE section 2's objective computed another way: the same
// noise (the trainer's generator, seeded, drawn t then masks per sample in batch order), and each
// masked token's -log p under a plain block-causal forward of x_0's blocks before its own plus
// its noisy block (the inference layout, not the training one), weighted 1 / (p * response
// length), averaged over the batch.
TEST(SftTrainerTest, TheLossIsTheObjectiveComputedDirectly) {
  const ModelConfig config = tiny_config();
  Qwen3LM model = random_lm(config, 9);
  const SftSample a = sample(10), b = sample(30, 13), c = sample(7, 3);
  const std::vector<const SftSample*> batch = {&a, &b, &c};

  // Before the step changes the weights.
  std::mt19937_64 rng(5);
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  double expected = 0;
  std::int64_t masked = 0;
  {
    torch::NoGradGuard no_grad;
    for (const SftSample* s : batch) {
      const double t = uniform(rng);
      const SftNoised n = sft_noise(*s, t, config.block_size, config.mask_token_id, rng);
      masked += static_cast<std::int64_t>(n.masked.size());
      const double weight = 1.0 / (n.p * static_cast<double>(s->response.size()) * 3.0);
      for (std::int64_t pos : n.masked) {
        const std::int64_t block_end = (pos / config.block_size + 1) * config.block_size;
        std::vector<std::int64_t> ids(n.x_0.begin(), n.x_0.begin() + block_end);
        for (std::int64_t j = block_end - config.block_size; j < block_end; ++j) {
          ids[static_cast<std::size_t>(j)] = n.x_t[static_cast<std::size_t>(j)];
        }
        at::Tensor logits = model->forward_block_causal(at::tensor(ids, at::kLong).unsqueeze(0));
        const double log_p = logits[0][pos]
                                 .to(at::kDouble)
                                 .log_softmax(-1)[n.x_0[static_cast<std::size_t>(pos)]]
                                 .item<double>();
        expected += -log_p * weight;
      }
    }
  }
  ASSERT_GT(masked, 0) << "the seed masks nothing: the test would check nothing";

  SftTrainerOptions o;
  o.optimizer.lr = 1e-3;
  o.seed = 5;
  auto trainer = SftTrainer::create(model, o);
  ASSERT_TRUE(trainer.ok()) << trainer.status().to_string();
  auto stats = (*trainer)->step(batch, o.optimizer.lr);
  ASSERT_TRUE(stats.ok()) << stats.status().to_string();
  EXPECT_EQ(stats->masked_tokens, masked);
  EXPECT_NEAR(stats->loss, expected, 1e-4 * expected);
}

// One optimizer step of a fresh model (the same seed each time) on `batch`, packed into rows of
// `pack` tokens run `rows` to a forward: its statistics and the updated lm_head.
struct OneStep {
  SftStepStats stats;
  at::Tensor lm_head;
};
std::optional<OneStep> one_step(const std::vector<const SftSample*>& batch, std::int64_t pack,
                                int rows) {
  Qwen3LM model = random_lm(tiny_config(), 9);
  SftTrainerOptions o;
  o.optimizer.lr = 1e-3;
  o.seed = 5;
  o.pack_length = pack;
  o.rows_per_forward = rows;
  auto trainer = SftTrainer::create(model, o);
  if (!trainer.ok()) {
    ADD_FAILURE() << trainer.status().to_string();
    return std::nullopt;
  }
  auto step = (*trainer)->step(batch, o.optimizer.lr);
  if (!step.ok()) {
    ADD_FAILURE() << step.status().to_string();
    return std::nullopt;
  }
  return OneStep{*step, model->lm_head.detach().clone()};
}

TEST(SftTrainerTest, PackingChangesTheForwardsNotTheLoss) {
  const SftSample a = sample(10), b = sample(30), c = sample(40);
  std::vector<const SftSample*> batch = {&a, &b, &c};
  std::vector<SftStepStats> stats;
  std::vector<at::Tensor> weights;
  for (std::int64_t pack : {0, 32}) {  // 32 tokens: two 16-token samples per row
    std::optional<OneStep> step = one_step(batch, pack, 1);
    ASSERT_TRUE(step);
    stats.push_back(step->stats);
    weights.push_back(step->lm_head);
  }
  EXPECT_EQ(stats[0].forwards, 3);
  EXPECT_EQ(stats[1].forwards, 2);
  EXPECT_EQ(stats[0].masked_tokens, stats[1].masked_tokens);
  EXPECT_NEAR(stats[0].loss, stats[1].loss, 1e-4 * std::abs(stats[0].loss));
  EXPECT_NEAR(stats[0].grad_norm, stats[1].grad_norm, 1e-4 * stats[0].grad_norm);
  EXPECT_TRUE(at::allclose(weights[0], weights[1], 1e-5, 1e-6));
}

// A step's model FLOPs are each sample's at its own length (16 tokens: 5 + 10 padded to whole
// blocks) plus lm_head on its masked tokens, three times (forward and backward), however the
// samples are packed.
TEST(SftTrainerTest, ModelFlopsCountEachSampleAtItsOwnLengthPackedOrNot) {
  const SftSample a = sample(10), b = sample(30), c = sample(40);
  std::vector<const SftSample*> batch = {&a, &b, &c};
  const ModelConfig config = tiny_config();
  for (std::int64_t pack : {0, 32}) {
    std::optional<OneStep> step = one_step(batch, pack, 1);
    ASSERT_TRUE(step);
    ASSERT_GT(step->stats.masked_tokens, 0);
    const double expected = 3 * (3 * training_sequence_flops(config, 16) +
                                 lm_head_flops(config, step->stats.masked_tokens));
    EXPECT_DOUBLE_EQ(step->stats.model_flops, expected) << "pack " << pack;
  }
}

// Rows of different lengths (two 16-token samples, one 16-token sample, one 28-token sample) in
// padded forwards: the same objective and update as a forward per row.
TEST(SftTrainerTest, RowsSharingAForwardChangeTheForwardsNotTheLoss) {
  const SftSample a = sample(10), b = sample(30), c = sample(40), d = sample(7, 20);
  std::vector<const SftSample*> batch = {&a, &b, &c, &d};
  std::vector<SftStepStats> stats;
  std::vector<at::Tensor> weights;
  for (int rows : {1, 2, 8}) {
    std::optional<OneStep> step = one_step(batch, 32, rows);
    ASSERT_TRUE(step);
    stats.push_back(step->stats);
    weights.push_back(step->lm_head);
  }
  EXPECT_EQ(stats[0].forwards, 3);
  EXPECT_EQ(stats[1].forwards, 2);
  EXPECT_EQ(stats[2].forwards, 1);
  for (std::size_t k = 1; k < stats.size(); ++k) {
    EXPECT_EQ(stats[0].masked_tokens, stats[k].masked_tokens);
    EXPECT_NEAR(stats[0].loss, stats[k].loss, 1e-4 * std::abs(stats[0].loss)) << k;
    EXPECT_NEAR(stats[0].grad_norm, stats[k].grad_norm, 1e-4 * stats[0].grad_norm) << k;
    EXPECT_TRUE(at::allclose(weights[0], weights[k], 1e-5, 1e-6)) << k;
  }
}

}  // namespace
}  // namespace dice
