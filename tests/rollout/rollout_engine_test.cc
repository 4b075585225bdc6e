// RolloutEngine on a tiny random model (CPU, fp32): groups submitted from several threads share
// one sampler and get exactly what the sampler gives them alone; a weights update waits for the
// running sequences, then changes the samples and the reported policy version.
#include "rollout/rollout_engine.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <future>
#include <thread>

#include "common/remove_tree.h"
#include "model/checkpoint/weights_checksum.h"
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

  ASSERT_TRUE((*engine)->update_weights(dir, 1).ok());
  auto after = (*engine)->generate(group(prompt, 1));
  ASSERT_TRUE(after.ok()) << after.status().to_string();
  EXPECT_EQ(after->policy_version, 1u);
  EXPECT_EQ(after->results[0].tokens, alone(next, group(prompt, 1))[0].tokens);
  EXPECT_NE(after->results[0].tokens, before->results[0].tokens);

  // A push of a version not newer than the one held is ignored (the initial weights, as v1).
  const std::string first = dir + "-first";
  ASSERT_TRUE(save_qwen3_lm(*model, first).ok());
  ASSERT_TRUE((*engine)->update_weights(first, 1).ok());
  auto same = (*engine)->generate(group(prompt, 1));
  ASSERT_TRUE(same.ok());
  EXPECT_EQ(same->results[0].tokens, after->results[0].tokens);
  EXPECT_TRUE(remove_tree(first).ok());

  // A bad folder is refused at once and keeps the old weights.
  EXPECT_EQ((*engine)->update_weights(dir + "/missing", 2).code(), StatusCode::kNotFound);
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
  ASSERT_TRUE((*engine)->update_weights(dir, 1, /*abort_in_flight=*/true).ok());
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

// Every parameter of `model`, copied: what a load must leave as it was.
std::vector<at::Tensor> snapshot(Qwen3LM model) {
  std::vector<at::Tensor> out;
  for (const NamedParameter& p : hf_named_parameters(*model)) out.push_back(p.tensor.clone());
  return out;
}

// The names of the parameters of `model` that differ from `before`.
std::vector<std::string> changed(Qwen3LM model, const std::vector<at::Tensor>& before) {
  std::vector<std::string> out;
  const std::vector<NamedParameter> now = hf_named_parameters(*model);
  for (std::size_t i = 0; i < now.size(); ++i) {
    if (!at::equal(now[i].tensor, before[i])) out.push_back(now[i].name);
  }
  return out;
}

uint64_t checksum_of(const std::string& dir) {
  auto checkpoint = Checkpoint::open(dir);
  EXPECT_TRUE(checkpoint.ok()) << checkpoint.status().to_string();
  return checkpoint.ok() ? weights_checksum(*checkpoint) : 0;
}

class RolloutEngineWeightsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // A death test's child (a new process that ends by _Exit, without TearDown) works in its
    // parent's folder, which the parent removes.
    if (const char* parents = std::getenv(kParentDirVariable)) {
      dir_ = parents;
    } else {
      char pattern[] = "/tmp/dice_engine_weights_XXXXXX";
      ASSERT_NE(mkdtemp(pattern), nullptr);
      dir_ = pattern;
    }
    ASSERT_TRUE(save_qwen3_lm(*random_lm(tiny_config(), 5), dir_ + "/v0").ok());
  }
  void TearDown() override { remove_tree(dir_).ignore(); }

  // An engine on the weights of dir_/v0, which it knows as its folder (with `held_dir`).
  std::unique_ptr<RolloutEngine> start(bool held_dir = true) {
    auto loaded = load_qwen3_lm(dir_ + "/v0");
    EXPECT_TRUE(loaded.ok()) << loaded.status().to_string();
    model_ = *loaded;
    auto engine = RolloutEngine::start(model_, greedy_options(), 0, checksum_of(dir_ + "/v0"),
                                       held_dir ? dir_ + "/v0" : "");
    EXPECT_TRUE(engine.ok()) << engine.status().to_string();
    return engine.ok() ? std::move(engine).value() : nullptr;
  }

  // A loader that writes the first half of another model's parameters, then fails as a device
  // would mid-copy.
  static RolloutEngine::WeightsLoader failing_halfway() {
    return [](Qwen3LMImpl& model, bool& copying) {
      Qwen3LM other = random_lm(tiny_config(), 77);
      const auto from = hf_named_parameters(*other);
      auto to = hf_named_parameters(model);
      copying = true;
      for (std::size_t i = 0; i < to.size() / 2; ++i) to[i].tensor.copy_(from[i].tensor);
      return Status::internal("device lost while copying");
    };
  }

  static constexpr char kParentDirVariable[] = "DICE_ENGINE_TEST_PARENT_DIR";
  std::string dir_;
  Qwen3LM model_{nullptr};
};

// A push whose checkpoint does not fit (cut short, a tensor of another shape or dtype, a tensor
// missing; each in the last tensor of the checkpoint order) is refused when it is handed over:
// the error names the tensor, no parameter changes, and the groups sampled afterwards come from
// the weights held before, under their version and checksum. A good push afterwards still loads.
TEST_F(RolloutEngineWeightsTest, ACheckpointThatDoesNotFitChangesNoWeight) {
  torch::NoGradGuard no_grad;
  auto engine = start();
  ASSERT_NE(engine, nullptr);
  ASSERT_TRUE(save_qwen3_lm(*random_lm(tiny_config(), 99), dir_ + "/v1").ok());
  ASSERT_TRUE(engine->update_weights(dir_ + "/v1", 1).ok());
  const std::vector<int64_t> prompt = {1, 2, 3, 4, 5};
  auto first = engine->generate(group(prompt, 1));
  ASSERT_TRUE(first.ok()) << first.status().to_string();
  ASSERT_EQ(first->policy_version, 1u);
  const std::vector<at::Tensor> before = snapshot(model_);
  Qwen3LM next = random_lm(tiny_config(), 7);
  std::uint64_t version = 2;
  for (testing_util::CheckpointFault fault : testing_util::kCheckpointFaults) {
    SCOPED_TRACE(testing_util::fault_name(fault));
    const std::string bad = dir_ + "/bad-v" + std::to_string(version);
    ASSERT_TRUE(testing_util::write_faulty_checkpoint(*next, bad, fault).ok());
    Status refused = engine->update_weights(bad, version++);
    EXPECT_FALSE(refused.ok());
    EXPECT_NE(refused.message().find(fault == testing_util::CheckpointFault::kTruncated
                                         ? "model.safetensors"
                                         : "lm_head.weight"),
              std::string::npos)
        << refused.to_string();
    auto after = engine->generate(group(prompt, 1));
    ASSERT_TRUE(after.ok()) << after.status().to_string();
    EXPECT_EQ(after->policy_version, 1u);
    EXPECT_EQ(after->weights_checksum, checksum_of(dir_ + "/v1"));
    EXPECT_EQ(after->results[0].tokens, first->results[0].tokens);
    EXPECT_EQ(after->results[0].log_probs, first->results[0].log_probs);
    EXPECT_EQ(changed(model_, before), std::vector<std::string>{});
  }
  EXPECT_TRUE(engine->take_load_failures().empty()) << "refusals are the caller's to report";
  ASSERT_TRUE(save_qwen3_lm(*next, dir_ + "/good").ok());
  ASSERT_TRUE(engine->update_weights(dir_ + "/good", version).ok());
  auto good = engine->generate(group(prompt, 1));
  ASSERT_TRUE(good.ok());
  EXPECT_EQ(good->policy_version, version);
  EXPECT_EQ(good->weights_checksum, checksum_of(dir_ + "/good"));
}

// A load that fails after writing part of the model (a device error mid-copy) leaves no mixed
// model behind: the engine reloads the version it held from its folder, checksum verified, keeps
// reporting that version, and keeps the failure for the worker to send to the learner.
TEST_F(RolloutEngineWeightsTest, ALoadThatFailsMidCopyRestoresTheHeldVersion) {
  torch::NoGradGuard no_grad;
  auto engine = start();
  ASSERT_NE(engine, nullptr);
  const std::vector<at::Tensor> before = snapshot(model_);
  engine->update_weights_with(failing_halfway(), "a flaky device", 1);
  auto after = engine->generate(group({1, 2, 3}, 1));
  ASSERT_TRUE(after.ok()) << after.status().to_string();
  EXPECT_EQ(after->policy_version, 0u);
  EXPECT_EQ(after->weights_checksum, checksum_of(dir_ + "/v0"));
  EXPECT_EQ(changed(model_, before), std::vector<std::string>{});
  const std::vector<Status> failures = engine->take_load_failures();
  ASSERT_EQ(failures.size(), 1u);
  EXPECT_NE(failures[0].message().find("weights v1 from a flaky device not loaded"),
            std::string::npos)
      << failures[0].to_string();
  EXPECT_NE(failures[0].message().find("restored from " + dir_ + "/v0"), std::string::npos)
      << failures[0].to_string();
  EXPECT_TRUE(engine->take_load_failures().empty());
}

// When the held version cannot be restored (no folder holds it, or its folder now holds other
// bytes than were loaded), the process ends rather than sample from a mixed model.
TEST_F(RolloutEngineWeightsTest, AMixedModelThatCannotBeRestoredEndsTheProcess) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  torch::NoGradGuard no_grad;
  ::setenv(kParentDirVariable, dir_.c_str(), 1);
  EXPECT_EXIT(
      {
        auto engine = start(/*held_dir=*/false);
        engine->update_weights_with(failing_halfway(), "a flaky device", 1);
        (void)engine->generate(group({1, 2, 3}, 1));
        std::_Exit(0);  // not reached: the failed load ends the process first
      },
      ::testing::ExitedWithCode(1), "cannot be restored");
  EXPECT_EXIT(
      {
        auto engine = start();
        ASSERT_TRUE(save_qwen3_lm(*random_lm(tiny_config(), 8), dir_ + "/v0").ok());
        engine->update_weights_with(failing_halfway(), "a flaky device", 1);
        (void)engine->generate(group({1, 2, 3}, 1));
        std::_Exit(0);
      },
      ::testing::ExitedWithCode(1), "has checksum");
  ::unsetenv(kParentDirVariable);
}

}  // namespace
}  // namespace dice
