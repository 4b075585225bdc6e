// Two levers of the RL update (issue 48), on a tiny random model (CPU):
//   - loss.kl_reference phase_start: the KL is against a frozen copy of the weights the phase
//     started with. On the first pass the policy is the one that sampled (ratio 1), where the
//     default reference (the sampler) gives k3 no gradient at all; once the policy has moved from
//     its starting weights, the frozen reference gives the term a gradient that pulls back.
//   - optimizer.warmup_steps: the optimizer steps at lr * k / N for its k-th step, which shows in
//     how far AdamW's first step moves the weights, and a loaded optimizer state goes on from its
//     own step count.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "learner/train/policy_trainer.h"
#include "tests/learner/train/policy_trainer_test_util.h"
#include "tests/model/model_test_util.h"

namespace dice {
namespace {

using testing_util::random_lm;
using testing_util::tiny_config;

PolicyTrainerOptions trainer_options() {
  return testing_util::tiny_trainer_options();
}

// Samples of the trainer's current policy (old log-probs its own: ratio 1), with `advantages`.
std::vector<TraceSample> on_policy(PolicyTrainer& trainer, const std::vector<double>& advantages) {
  std::vector<TraceSample> out;
  for (std::size_t i = 0; i < advantages.size(); ++i) {
    TraceSample s;
    s.prompt = {1, 2, 3, 4};
    for (int t = 0; t < 8; ++t) {
      s.response.push_back(static_cast<std::int64_t>(5 + (7 * i + 3 * t) % 50));
      s.unmask_steps.push_back((t * 3 + static_cast<int>(i)) % 4);
    }
    s.old_log_probs.assign(s.response.size(), 0.0f);
    auto lp = trainer.log_probs(s);
    EXPECT_TRUE(lp.ok()) << lp.status().to_string();
    if (lp.ok()) s.old_log_probs = *lp;
    s.advantage = advantages[i];
    out.push_back(std::move(s));
  }
  return out;
}

TEST(PolicyTrainerSignalTest, APhaseStartReferenceGivesTheKlAGradientAtRatioOne) {
  Qwen3LM model = random_lm(tiny_config(), 3);
  PolicyTrainerOptions o = trainer_options();
  o.optimizer.lr = 1e-2;
  o.loss.kl_beta = 0.5;
  o.loss.kl_reference = KlReference::kPhaseStart;
  auto anchored = PolicyTrainer::create(model, o);
  ASSERT_TRUE(anchored.ok()) << anchored.status().to_string();
  ASSERT_TRUE((*anchored)->uses_reference());
  auto start = frozen_copy(model);  // the phase's starting weights
  ASSERT_TRUE(start.ok()) << start.status().to_string();
  (*anchored)->set_reference(*start);
  // Move the policy away from them: a few updates towards the first samples' tokens.
  for (int step = 0; step < 4; ++step) {
    auto stats = (*anchored)->update(on_policy(**anchored, {1.0, -1.0, 1.0}));
    ASSERT_TRUE(stats.ok()) << stats.status().to_string();
  }
  // The reference stayed where it was while the policy moved.
  EXPECT_TRUE(at::equal((*start)->lm_head, (*anchored)->reference()->lm_head));
  EXPECT_FALSE(at::equal((*start)->lm_head, model->lm_head));

  // Fresh samples of the moved policy with no advantage: the first pass's ratio is 1, the
  // policy term has no gradient, and what is left is the KL term's.
  const std::vector<TraceSample> fresh = on_policy(**anchored, {0.0, 0.0, 0.0});
  auto pulled = (*anchored)->gradients(fresh);
  ASSERT_TRUE(pulled.ok()) << pulled.status().to_string();
  EXPECT_NEAR(pulled->mean_ratio, 1.0, 1e-5);
  EXPECT_GT(pulled->kl, 1e-3);
  EXPECT_GT(pulled->grad_norm, 1e-3);

  // The default reference, the sampler, on the same weights and samples: k3 is 0 and flat.
  PolicyTrainerOptions sampling = o;
  sampling.loss.kl_reference = KlReference::kSampling;
  auto unanchored = PolicyTrainer::create(model, sampling);
  ASSERT_TRUE(unanchored.ok());
  EXPECT_FALSE((*unanchored)->uses_reference());
  auto flat = (*unanchored)->gradients(fresh);
  ASSERT_TRUE(flat.ok()) << flat.status().to_string();
  EXPECT_LT(flat->kl, 1e-9);
  EXPECT_LT(flat->grad_norm, 1e-4 * pulled->grad_norm);

  // An update with only the KL term (a fresh AdamW, so no momentum from the moves away) takes
  // the policy back towards the reference.
  PolicyTrainerOptions back = o;
  back.optimizer.lr = 1e-3;
  auto pulling = PolicyTrainer::create(model, back);
  ASSERT_TRUE(pulling.ok());
  (*pulling)->set_reference(*start);
  ASSERT_TRUE((*pulling)->update(fresh).ok());
  auto after = (*pulling)->gradients(on_policy(**pulling, {0.0, 0.0, 0.0}));
  ASSERT_TRUE(after.ok());
  EXPECT_LT(after->kl, pulled->kl);
}

TEST(PolicyTrainerSignalTest, WithoutAReferenceTheFirstUpdateTakesTheWeightsItStartsFrom) {
  Qwen3LM model = random_lm(tiny_config(), 3);
  PolicyTrainerOptions o = trainer_options();
  o.loss.kl_reference = KlReference::kPhaseStart;
  const at::Tensor start = model->lm_head.detach().clone();
  auto trainer = PolicyTrainer::create(model, o);
  ASSERT_TRUE(trainer.ok());
  EXPECT_TRUE((*trainer)->reference().is_empty());
  ASSERT_TRUE((*trainer)->update(on_policy(**trainer, {1.0, -1.0})).ok());
  ASSERT_FALSE((*trainer)->reference().is_empty());
  EXPECT_TRUE(at::equal((*trainer)->reference()->lm_head, start));
  // kl_beta 0 needs none.
  o.loss.kl_beta = 0;
  auto off = PolicyTrainer::create(model, o);
  ASSERT_TRUE(off.ok());
  EXPECT_FALSE((*off)->uses_reference());
}

TEST(PolicyTrainerSignalTest, WarmupLrRisesLinearlyToLr) {
  OptimizerOptions o;
  o.lr = 2e-5;
  o.warmup_steps = 4;
  EXPECT_DOUBLE_EQ(warmup_lr(o, 0), 0.5e-5);  // the 1st step: lr / 4
  EXPECT_DOUBLE_EQ(warmup_lr(o, 1), 1e-5);
  EXPECT_DOUBLE_EQ(warmup_lr(o, 2), 1.5e-5);
  EXPECT_DOUBLE_EQ(warmup_lr(o, 3), 2e-5);  // the 4th: lr
  EXPECT_DOUBLE_EQ(warmup_lr(o, 100), 2e-5);
  o.warmup_steps = 0;  // off: lr from the first step
  EXPECT_DOUBLE_EQ(warmup_lr(o, 0), 2e-5);
  o.warmup_steps = 1;
  EXPECT_DOUBLE_EQ(warmup_lr(o, 0), 2e-5);
}

// AdamW's first step moves every weight with a gradient by about its lr (m / sqrt(v) is the
// gradient's sign), so the largest change of the first update is the lr it ran at.
TEST(PolicyTrainerSignalTest, TheOptimizerStepsAtTheWarmupLrAndAResumeGoesOnFromItsCount) {
  const double lr = 1e-3;
  std::vector<double> moved;
  for (int warmup : {0, 4}) {
    Qwen3LM model = random_lm(tiny_config(), 3);
    PolicyTrainerOptions o = trainer_options();
    o.optimizer.lr = lr;
    o.optimizer.warmup_steps = warmup;
    o.optimizer.grad_clip_norm = 0;
    auto trainer = PolicyTrainer::create(model, o);
    ASSERT_TRUE(trainer.ok());
    const at::Tensor before = model->lm_head.detach().clone();
    auto stats = (*trainer)->update(on_policy(**trainer, {1.0, -1.0, 0.5}));
    ASSERT_TRUE(stats.ok()) << stats.status().to_string();
    EXPECT_DOUBLE_EQ(stats->lr, warmup == 0 ? lr : lr / 4);
    moved.push_back((model->lm_head.detach() - before).abs().max().item<double>());
    if (warmup == 0) continue;

    auto second = (*trainer)->update(on_policy(**trainer, {1.0, -1.0, 0.5}));
    ASSERT_TRUE(second.ok());
    EXPECT_DOUBLE_EQ(second->lr, lr / 2);
    // A resume: the optimizer state saved after two steps, loaded into a new trainer.
    const std::string path =
        (std::filesystem::temp_directory_path() /
         ("dice_warmup_" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) +
          ".pt"))
            .string();
    ASSERT_TRUE((*trainer)->save_optimizer_state(path).ok());
    Qwen3LM other = random_lm(tiny_config(), 9);
    auto resumed = PolicyTrainer::create(other, o);
    ASSERT_TRUE(resumed.ok());
    EXPECT_EQ((*resumed)->steps_taken(), 0);
    ASSERT_TRUE((*resumed)->load_optimizer_state(path).ok());
    std::filesystem::remove(path);
    EXPECT_EQ((*resumed)->steps_taken(), 2);
    auto third = (*resumed)->update(on_policy(**resumed, {1.0, -1.0, 0.5}));
    ASSERT_TRUE(third.ok());
    EXPECT_DOUBLE_EQ(third->lr, lr * 3 / 4);
  }
  EXPECT_NEAR(moved[0], lr, 0.1 * lr);
  EXPECT_NEAR(moved[1], lr / 4, 0.1 * lr / 4);
}

}  // namespace
}  // namespace dice
