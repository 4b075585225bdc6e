// BlockDiffusionSampler on CUDA: the same greedy tokens as on the CPU, a seeded CUDA generator
// that reproduces its draws, and bf16 runs with continuous batching. Skips without a GPU.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <vector>

#include "common/torch_compat.h"
#include "rollout/sampler.h"
#include "tests/model/model_test_util.h"

namespace dice {
namespace {

using testing_util::random_lm;
using testing_util::tiny_config;

class SamplerGpuTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!compat::cuda_available()) {
      GTEST_SKIP() << "needs a CUDA GPU: " << compat::describe_torch();
    }
  }

  SamplerOptions options(Remasking r) const {
    SamplerOptions o;
    o.sampling.temperature = 0.0;
    o.sampling.max_new_tokens = 30;
    o.sampling.remasking = r;
    o.sampling.threshold = 0.2;
    o.sampling.stop_token_ids = {};
    o.mask_token_id = config_.mask_token_id;
    o.max_batch = 3;
    o.max_sequence_length = 64;
    return o;
  }

  std::vector<GenerationRequest> requests() const {
    std::vector<GenerationRequest> out;
    at::manual_seed(3);
    uint64_t id = 0;
    for (int64_t len : {1, 7, 12, 5, 2}) {
      at::Tensor t = at::randint(0, config_.vocab_size - 1, {len}, at::kLong);
      GenerationRequest r;
      r.id = id++;
      r.prompt.assign(t.data_ptr<int64_t>(), t.data_ptr<int64_t>() + len);
      r.max_new_tokens = static_cast<int>(10 + 4 * id);
      out.push_back(r);
    }
    return out;
  }

  std::vector<GenerationResult> run(Qwen3LM lm, const SamplerOptions& o) {
    auto sampler = BlockDiffusionSampler::create(lm, o);
    EXPECT_TRUE(sampler.ok()) << sampler.status().to_string();
    if (!sampler.ok()) return {};
    auto out = (*sampler)->generate(requests());
    EXPECT_TRUE(out.ok()) << out.status().to_string();
    return out.ok() ? *out : std::vector<GenerationResult>{};
  }

  torch::NoGradGuard no_grad_;
  ModelConfig config_ = tiny_config();
};

TEST_F(SamplerGpuTest, GreedyOnCudaMatchesCpu) {
  Qwen3LM cpu = random_lm(config_, 11);
  Qwen3LM gpu = random_lm(config_, 11);
  gpu->to(at::kCUDA);
  for (Remasking r : {Remasking::kLowConfidenceStatic, Remasking::kLowConfidenceDynamic,
                      Remasking::kEntropyBounded}) {
    std::vector<GenerationResult> want = run(cpu, options(r));
    std::vector<GenerationResult> got = run(gpu, options(r));
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) {
      EXPECT_EQ(got[i].tokens, want[i].tokens) << "request " << i;
      EXPECT_EQ(got[i].unmask_steps, want[i].unmask_steps) << "request " << i;
    }
  }
}

TEST_F(SamplerGpuTest, SeededCudaDrawsReproduce) {
  Qwen3LM gpu = random_lm(config_, 11);
  gpu->to(at::kCUDA);
  SamplerOptions o = options(Remasking::kLowConfidenceDynamic);
  o.sampling.temperature = 1.0;
  o.seed = 77;
  std::vector<GenerationResult> a = run(gpu, o), b = run(gpu, o);
  o.seed = 78;
  std::vector<GenerationResult> c = run(gpu, o);
  ASSERT_EQ(a.size(), 5u);
  ASSERT_EQ(b.size(), 5u);
  ASSERT_EQ(c.size(), 5u);
  bool differs = false;
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].tokens, b[i].tokens);
    EXPECT_EQ(a[i].log_probs, b[i].log_probs);
    differs = differs || a[i].tokens != c[i].tokens;
  }
  EXPECT_TRUE(differs);
}

TEST_F(SamplerGpuTest, Bf16WithContinuousBatching) {
  Qwen3LM gpu = random_lm(config_, 11);
  gpu->to(at::kCUDA, at::kBFloat16);
  SamplerOptions o = options(Remasking::kLowConfidenceDynamic);
  o.sampling.temperature = 1.0;
  o.max_batch = 2;
  std::vector<GenerationRequest> rs = requests();
  std::vector<GenerationResult> got = run(gpu, o);
  ASSERT_EQ(got.size(), rs.size());
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i].tokens.size(), static_cast<size_t>(rs[i].max_new_tokens));
    EXPECT_EQ(got[i].unmask_steps.size(), got[i].tokens.size());
    for (int32_t k : got[i].unmask_steps) {
      EXPECT_GE(k, 0);
      EXPECT_LT(k, o.sampling.denoising_steps);
    }
    for (float lp : got[i].log_probs) EXPECT_LE(lp, 0.0f);
  }
}

}  // namespace
}  // namespace dice
