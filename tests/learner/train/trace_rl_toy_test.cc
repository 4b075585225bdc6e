// The RL machinery end to end, in one process, on a toy task: the real sampler draws groups of
// samples with traces from a tiny random model, a toy reward says whether most of a response's
// tokens are "low" (id < 32), group_advantages z-scores it, and the TraceRL update trains the
// same model. If the sign, the traces or the views were wrong anywhere, the reward would not
// climb; with them right it climbs from ~0.1 (this model rarely writes mostly low ids) to above
// 0.8 within 40 updates, and with the advantage's sign flipped it falls to 0 (checked by hand).
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include "learner/step/advantage.h"
#include "learner/train/policy_trainer.h"
#include "rollout/sampler.h"
#include "tests/model/model_test_util.h"

namespace dice {
namespace {

using testing_util::random_lm;
using testing_util::tiny_config;

double toy_reward(const std::vector<int64_t>& tokens) {
  std::size_t low = 0;
  for (int64_t t : tokens) low += t < 32;
  return 2 * low > tokens.size() ? 1.0 : 0.0;
}

TEST(TraceRlToyTest, RewardClimbsWhenTheUpdateFollowsTheTraces) {
  Qwen3LM model = random_lm(tiny_config(), 12);
  SamplerOptions sampling;
  sampling.sampling.temperature = 1.0;
  sampling.sampling.block_size = 4;
  sampling.sampling.denoising_steps = 4;
  sampling.sampling.remasking = Remasking::LOW_CONFIDENCE_STATIC;
  sampling.sampling.max_new_tokens = 8;
  sampling.sampling.stop_token_ids = {};
  sampling.mask_token_id = tiny_config().mask_token_id;
  sampling.max_batch = 32;
  sampling.max_sequence_length = 32;
  PolicyTrainerOptions o;
  o.layout.block_size = 4;
  o.layout.denoising_steps = 4;
  o.layout.mask_token_id = tiny_config().mask_token_id;
  o.optimizer.lr = 3e-3;
  o.optimizer.grad_accumulation = 1;
  auto trainer = PolicyTrainer::create(model, o);
  ASSERT_TRUE(trainer.ok()) << trainer.status().to_string();

  const std::vector<std::vector<int64_t>> prompts = {{1, 2, 3}, {4, 5, 6, 7, 8}, {9, 10}};
  const int group = 8, steps = 40;
  std::vector<double> mean_reward;
  for (int step = 0; step < steps; ++step) {
    sampling.seed = static_cast<uint64_t>(step) + 1;
    std::vector<GenerationRequest> requests;
    for (const auto& p : prompts) {
      for (int i = 0; i < group; ++i) {
        GenerationRequest r;
        r.id = requests.size() + 1;
        r.prompt = p;
        requests.push_back(r);
      }
    }
    std::vector<GenerationResult> results;
    {
      torch::NoGradGuard no_grad;
      auto sampler = BlockDiffusionSampler::create(model, sampling);
      ASSERT_TRUE(sampler.ok()) << sampler.status().to_string();
      auto generated = (*sampler)->generate(requests);
      ASSERT_TRUE(generated.ok()) << generated.status().to_string();
      results = std::move(generated).value();
    }
    std::vector<TraceSample> samples;
    double reward_sum = 0;
    for (std::size_t g = 0; g < prompts.size(); ++g) {
      std::vector<double> rewards;
      for (int i = 0; i < group; ++i) rewards.push_back(toy_reward(results[g * group + i].tokens));
      for (double r : rewards) reward_sum += r;
      GroupAdvantages adv = group_advantages(rewards, /*drop_constant=*/true);
      if (adv.dropped) continue;
      for (int i = 0; i < group; ++i) {
        const GenerationResult& res = results[g * group + static_cast<std::size_t>(i)];
        TraceSample s;
        s.prompt = prompts[g];
        s.response = res.tokens;
        s.unmask_steps = res.unmask_steps;
        s.old_log_probs = res.log_probs;
        s.tail = res.tail_tokens;
        s.tail_unmask_steps = res.tail_unmask_steps;
        s.advantage = adv.advantages[static_cast<std::size_t>(i)];
        samples.push_back(std::move(s));
      }
    }
    mean_reward.push_back(reward_sum / static_cast<double>(prompts.size() * group));
    auto stats = (*trainer)->update(samples);
    ASSERT_TRUE(stats.ok()) << stats.status().to_string();
    if (!samples.empty()) {
      // On-policy: the update's first look at the samples agrees with the sampler.
      EXPECT_NEAR(stats->mean_ratio, 1.0, 1e-3) << "step " << step;
    }
  }
  const double first = (mean_reward[0] + mean_reward[1] + mean_reward[2]) / 3;
  const double last =
      (mean_reward[steps - 1] + mean_reward[steps - 2] + mean_reward[steps - 3]) / 3;
  EXPECT_GT(last, first + 0.25) << "mean reward: first 3 steps " << first << ", last 3 " << last;
  EXPECT_GT(last, 0.8);
}

}  // namespace
}  // namespace dice
