// RolloutEngine on a tiny random model (CPU, fp32): groups submitted from several threads share
// one sampler and get exactly what the sampler gives them alone; a weights update waits for the
// running sequences, then changes the samples and the reported policy version.
#include "rollout/rollout_engine.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <future>
#include <thread>

#include "common/remove_tree.h"
#include "model/weights.h"
#include "rollout/sampler.h"
#include "tests/model/model_test_util.h"

namespace dice {
namespace {

using testing_util::random_lm;
using testing_util::tiny_config;

SamplerOptions greedy_options() {
  SamplerOptions o;
  o.sampling.temperature = 0;
  o.sampling.block_size = 4;
  o.sampling.denoising_steps = 4;
  o.sampling.remasking = Remasking::LOW_CONFIDENCE_STATIC;
  o.sampling.max_new_tokens = 12;
  o.sampling.stop_token_ids = {};
  o.mask_token_id = tiny_config().mask_token_id;
  o.max_batch = 3;
  o.max_sequence_length = 64;
  return o;
}

std::vector<GenerationRequest> group(std::vector<int64_t> prompt, int n) {
  std::vector<GenerationRequest> out(static_cast<size_t>(n));
  for (auto& r : out) r.prompt = prompt;
  return out;
}

std::vector<GenerationResult> alone(Qwen3LM model, std::vector<GenerationRequest> requests) {
  auto sampler = BlockDiffusionSampler::create(model, greedy_options());
  EXPECT_TRUE(sampler.ok()) << sampler.status().to_string();
  auto results = (*sampler)->generate(std::move(requests));
  EXPECT_TRUE(results.ok()) << results.status().to_string();
  return results.ok() ? *results : std::vector<GenerationResult>{};
}

TEST(RolloutEngineTest, ConcurrentGroupsMatchTheSamplerAlone) {
  torch::NoGradGuard no_grad;
  Qwen3LM model = random_lm(tiny_config(), 5);
  auto engine = RolloutEngine::start(model, greedy_options(), 7);
  ASSERT_TRUE(engine.ok()) << engine.status().to_string();
  const std::vector<std::vector<int64_t>> prompts = {{1, 2, 3}, {4, 5, 6, 7, 8}, {9}, {10, 11}};
  std::vector<std::future<Result<GroupResult>>> futures;
  for (const auto& p : prompts) {
    futures.push_back(std::async(std::launch::async, [&, p] {
      return (*engine)->generate(group(p, 2));  // 4 groups x 2 samples over 3 slots
    }));
  }
  for (size_t i = 0; i < prompts.size(); ++i) {
    Result<GroupResult> got = futures[i].get();
    ASSERT_TRUE(got.ok()) << got.status().to_string();
    EXPECT_EQ(got->policy_version, 7u);
    std::vector<GenerationResult> want = alone(model, group(prompts[i], 1));
    ASSERT_EQ(got->results.size(), 2u);
    for (const auto& r : got->results) {
      EXPECT_EQ(r.tokens, want[0].tokens) << "prompt " << i;
      EXPECT_EQ(r.unmask_steps, want[0].unmask_steps) << "prompt " << i;
      EXPECT_EQ(r.tokens.size(), 12u);
    }
  }
  EXPECT_GE((*engine)->stats().finished, 8);
}

TEST(RolloutEngineTest, BadRequestFailsOnlyItsGroup) {
  torch::NoGradGuard no_grad;
  Qwen3LM model = random_lm(tiny_config(), 5);
  auto engine = RolloutEngine::start(model, greedy_options(), 0);
  ASSERT_TRUE(engine.ok());
  auto bad = (*engine)->generate(group({1, 999}, 2));  // 999 is outside the 64-token vocabulary
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument) << bad.status().to_string();
  auto good = (*engine)->generate(group({1, 2}, 2));
  ASSERT_TRUE(good.ok()) << good.status().to_string();
  EXPECT_EQ(good->results.size(), 2u);
}

TEST(RolloutEngineTest, WeightsUpdateChangesSamplesAndVersion) {
  torch::NoGradGuard no_grad;
  const std::string dir =
      std::filesystem::temp_directory_path() / ("dice_engine_test_" + std::to_string(::getpid()));
  Qwen3LM next = random_lm(tiny_config(), 99);
  ASSERT_TRUE(save_qwen3_lm(*next, dir).ok());
  Qwen3LM model = random_lm(tiny_config(), 5);
  auto engine = RolloutEngine::start(model, greedy_options(), 0);
  ASSERT_TRUE(engine.ok());
  const std::vector<int64_t> prompt = {1, 2, 3, 4, 5};
  auto before = (*engine)->generate(group(prompt, 1));
  ASSERT_TRUE(before.ok());
  EXPECT_EQ(before->policy_version, 0u);

  (*engine)->update_weights(dir, 1);
  auto after = (*engine)->generate(group(prompt, 1));
  ASSERT_TRUE(after.ok()) << after.status().to_string();
  EXPECT_EQ(after->policy_version, 1u);
  EXPECT_EQ(after->results[0].tokens, alone(next, group(prompt, 1))[0].tokens);
  EXPECT_NE(after->results[0].tokens, before->results[0].tokens);

  // A push of a version not newer than the one held is ignored (the initial weights, as v1).
  const std::string first = dir + "-first";
  ASSERT_TRUE(save_qwen3_lm(*model, first).ok());
  (*engine)->update_weights(first, 1);
  auto same = (*engine)->generate(group(prompt, 1));
  ASSERT_TRUE(same.ok());
  EXPECT_EQ(same->results[0].tokens, after->results[0].tokens);
  EXPECT_TRUE(remove_tree(first).ok());

  (*engine)->update_weights(dir + "/missing", 2);  // a bad folder keeps the old weights
  auto kept = (*engine)->generate(group(prompt, 1));
  ASSERT_TRUE(kept.ok());
  EXPECT_EQ(kept->policy_version, 1u);
  EXPECT_TRUE(remove_tree(dir).ok());
}

TEST(RolloutEngineTest, AbortingUpdateStartsTheRunningGroupOverOnTheNewWeights) {
  torch::NoGradGuard no_grad;
  const std::string dir =
      std::filesystem::temp_directory_path() / ("dice_engine_abort_" + std::to_string(::getpid()));
  Qwen3LM next = random_lm(tiny_config(), 99);
  ASSERT_TRUE(save_qwen3_lm(*next, dir).ok());
  // Long sequences (hundreds of forwards), so the update lands while the group runs.
  SamplerOptions o = greedy_options();
  o.sampling.max_new_tokens = 400;
  o.max_sequence_length = 512;
  Qwen3LM model = random_lm(tiny_config(), 5);
  auto engine = RolloutEngine::start(model, o, 0);
  ASSERT_TRUE(engine.ok());
  const std::vector<int64_t> prompt = {1, 2, 3, 4, 5};
  auto running =
      std::async(std::launch::async, [&] { return (*engine)->generate(group(prompt, 2)); });
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while ((*engine)->stats().steps < 2 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ASSERT_GE((*engine)->stats().steps, 2);
  (*engine)->update_weights(dir, 1, /*abort_in_flight=*/true);
  Result<GroupResult> got = running.get();
  ASSERT_TRUE(got.ok()) << got.status().to_string();
  EXPECT_EQ((*engine)->sequences_aborted(), 2);
  // The whole group was sampled again by the new policy, and says so.
  EXPECT_EQ(got->policy_version, 1u);
  auto sampler = BlockDiffusionSampler::create(next, o);
  ASSERT_TRUE(sampler.ok());
  auto want = (*sampler)->generate(group(prompt, 1));
  ASSERT_TRUE(want.ok());
  ASSERT_EQ(got->results.size(), 2u);
  for (const auto& r : got->results) {
    EXPECT_EQ(r.tokens, (*want)[0].tokens);
    EXPECT_EQ(r.tokens.size(), 400u);
  }
  EXPECT_TRUE(remove_tree(dir).ok());
}

}  // namespace
}  // namespace dice
