// BlockDiffusionSampler on CUDA: the same greedy tokens as on the CPU, a seeded CUDA generator
// that reproduces its draws, bf16 runs with continuous batching, and forwards replayed from CUDA
// graphs that give the eager forwards' results. Skips without a GPU.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <vector>

#include "model/torch_compat.h"
#include "rollout/chunk_forward_graphs.h"
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
  for (Remasking r : {Remasking::LOW_CONFIDENCE_STATIC, Remasking::LOW_CONFIDENCE_DYNAMIC,
                      Remasking::ENTROPY_BOUNDED}) {
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
  SamplerOptions o = options(Remasking::LOW_CONFIDENCE_DYNAMIC);
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
  SamplerOptions o = options(Remasking::LOW_CONFIDENCE_DYNAMIC);
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

// The graphed forward gives the eager forward's hidden states on the same layout, for a new shape
// (a capture) and for new inputs in a shape already captured (a replay).
TEST_F(SamplerGpuTest, GraphedChunkForwardMatchesEager) {
  if (!ChunkForwardGraphs::supported(c10::Device(at::kCUDA, 0))) {
    GTEST_SKIP() << "this build's LibTorch cannot capture CUDA graphs";
  }
  Qwen3LM gpu = random_lm(config_, 11);
  gpu->to(at::kCUDA);
  const int64_t rows = 3, block = config_.block_size;
  KvCache cache(config_, rows, 64, at::TensorOptions().device(at::kCUDA));
  // Committed keys/values to attend to: a prefill of different lengths per row.
  at::manual_seed(5);
  at::Tensor prompt = at::randint(0, config_.vocab_size - 1, {rows, 4 * block}, at::kLong);
  gpu->prefill(prompt.to(at::kCUDA), {4 * block, 2 * block, 0}, cache);

  ChunkForwardGraphs graphs(gpu, cache);
  auto check = [&](int64_t chunk_len, int64_t seed) {
    at::manual_seed(seed);
    at::Tensor ids =
        at::randint(0, config_.vocab_size - 1, {rows, chunk_len}, at::kLong).to(at::kCUDA);
    CachedChunkLayout layout = gpu->chunk_layout(cache, {chunk_len, block, 0}, chunk_len,
                                                 /*packed=*/false, at::kCUDA, 16);
    EXPECT_EQ(layout.key_slots % 16, 0);
    at::Tensor want = gpu->hidden_chunk(ids, layout, cache).clone();
    at::Tensor got = graphs.run(ids, layout).clone();
    EXPECT_TRUE(at::allclose(got, want, 1e-5, 1e-5))
        << "chunk " << chunk_len << ": max difference " << (got - want).abs().max().item<double>();
  };
  check(block, 1);
  check(block, 2);  // replay with new tokens
  check(2 * block, 3);
  EXPECT_EQ(graphs.graphs(), 2);
  EXPECT_EQ(graphs.replays(), 3);
}

// A run from CUDA graphs commits the tokens an eager run commits, with continuous batching (slots
// that go idle and join again, so the padded graphed layout holds idle rows).
TEST_F(SamplerGpuTest, GreedyFromGraphsMatchesEager) {
  Qwen3LM gpu = random_lm(config_, 11);
  gpu->to(at::kCUDA);
  for (Remasking r : {Remasking::LOW_CONFIDENCE_STATIC, Remasking::LOW_CONFIDENCE_DYNAMIC}) {
    SamplerOptions eager = options(r);
    eager.cuda_graphs = false;
    SamplerOptions graphed = options(r);
    graphed.graph_key_slots = 8;
    auto sampler = BlockDiffusionSampler::create(gpu, graphed);
    ASSERT_TRUE(sampler.ok()) << sampler.status().to_string();
    auto got = (*sampler)->generate(requests());
    ASSERT_TRUE(got.ok()) << got.status().to_string();
    std::vector<GenerationResult> want = run(gpu, eager);
    ASSERT_EQ(got->size(), want.size());
    for (size_t i = 0; i < want.size(); ++i) {
      EXPECT_EQ((*got)[i].tokens, want[i].tokens) << "request " << i;
      EXPECT_EQ((*got)[i].unmask_steps, want[i].unmask_steps) << "request " << i;
    }
    const SamplerStats& stats = (*sampler)->stats();
    if (ChunkForwardGraphs::supported(c10::Device(at::kCUDA, 0))) {
      EXPECT_EQ(stats.graphed_steps, stats.steps);
      EXPECT_GE(stats.graphs, 2);  // block and commit chunks at least
    }
  }
}

}  // namespace
}  // namespace dice
