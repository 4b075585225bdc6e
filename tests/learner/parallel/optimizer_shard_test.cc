// The sharded optimizer (learner.data_parallel.shard: optimizer, optimizer_shard.h) and the
// sharded parameters (shard: parameters, parameter_shards.h, wired in data_parallel.h) on CPU
// replicas in one process: the in-process collective's reduce-scatter and all-gather (uneven
// buckets padded into equal chunks), SFT steps and TraceRL updates on 1, 2, 3 and 4 replicas
// equal to the replicated steps (on one, and on as many), and the resume state written one file
// per rank and read back. A failing or stuck rank: data_parallel_test.cc, for every mode.
#include "learner/parallel/optimizer_shard.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "learner/parallel/data_parallel.h"
#include "learner/parallel/gradient_reducer.h"
#include "learner/parallel/in_process_collective.h"
#include "learner/train/policy_trainer.h"
#include "learner/train/sft_trainer.h"
#include "tests/learner/parallel/on_ranks.h"
#include "tests/learner/train/policy_trainer_test_util.h"
#include "tests/model/model_test_util.h"

namespace dice {
namespace {

using testing_util::random_lm;
using testing_util::tiny_config;

// Weights agree within this: the sums over ranks add the same float32 terms in another grouping
// than one replica's accumulation does, and AdamW's first steps move a weight by about lr
// whatever the gradient's size, so a rounding difference in a near-zero gradient shows as a
// part of lr (1e-3 here). Measured on this CPU: at most 9.2e-6 after 4 SFT steps on 2 replicas
// (the replicated path's own difference; sharded and replicated on 3 replicas differ by 1.2e-7),
// 1.2e-7 after the TraceRL updates; a sharded step that clips by its own norm instead of the
// global one is off by 9e-5 or more.
constexpr double kWeightTolerance = 3e-5;

std::vector<at::Tensor> weights(Qwen3LM model) {
  std::vector<at::Tensor> out;
  for (const at::Tensor& p : model->parameters()) out.push_back(p.detach().clone());
  return out;
}

double max_difference(const std::vector<at::Tensor>& a, const std::vector<at::Tensor>& b) {
  EXPECT_EQ(a.size(), b.size());
  double most = 0;
  for (std::size_t i = 0; i < a.size() && i < b.size(); ++i) {
    most = std::max(most, (a[i] - b[i]).abs().max().item<double>());
  }
  return most;
}

using testing_util::on_ranks;

TEST(InProcessCollectiveTest, ReduceScatterSumsEachRanksChunkAndAllGatherSharesThem) {
  constexpr int kWorld = 3;
  InProcessGroup group(kWorld, std::chrono::seconds(20));
  std::vector<at::Tensor> flats;
  for (int r = 0; r < kWorld; ++r) flats.push_back(at::arange(9, at::kFloat) * (r + 1));
  std::vector<Status> results(kWorld);
  on_ranks(kWorld, [&](int r) {
    InProcessCollective* c = group.rank(r);
    Status s = c->start_reduce_scatter(0, flats[static_cast<std::size_t>(r)]);
    if (s.ok()) s = c->wait();
    results[static_cast<std::size_t>(r)] = s;
  });
  const at::Tensor sum = at::arange(9, at::kFloat) * 6;  // 1 + 2 + 3 times each
  for (int r = 0; r < kWorld; ++r) {
    const auto u = static_cast<std::size_t>(r);
    ASSERT_TRUE(results[u].ok()) << results[u].to_string();
    EXPECT_TRUE(at::equal(flats[u].narrow(0, 3 * r, 3), sum.narrow(0, 3 * r, 3))) << r;
    // The chunks it does not own are left as they were: no reader may count on them.
    const int other = (r + 1) % kWorld;
    EXPECT_TRUE(at::equal(flats[u].narrow(0, 3 * other, 3),
                          (at::arange(9, at::kFloat) * (r + 1)).narrow(0, 3 * other, 3)));
  }
  on_ranks(kWorld, [&](int r) {
    InProcessCollective* c = group.rank(r);
    Status s = c->start_all_gather(1, flats[static_cast<std::size_t>(r)]);
    if (s.ok()) s = c->wait();
    results[static_cast<std::size_t>(r)] = s;
  });
  for (int r = 0; r < kWorld; ++r) {
    ASSERT_TRUE(results[static_cast<std::size_t>(r)].ok());
    EXPECT_TRUE(at::equal(flats[static_cast<std::size_t>(r)], sum)) << r;
  }
  // A buffer that does not cut into equal chunks is refused at the start, on every rank.
  EXPECT_EQ(group.rank(0)->start_reduce_scatter(2, at::zeros({8})).code(),
            StatusCode::kInvalidArgument);
}

// A batch of SFT samples of different lengths (so the ranks' shares differ).
std::vector<SftSample> sft_samples() {
  std::vector<SftSample> out;
  for (int i = 0; i < 5; ++i) {
    SftSample s;
    s.prompt = {1, 2, 3, 4, 5};
    for (int k = 0; k < 6 + 3 * i; ++k) s.response.push_back((7 * i + k) % 60);
    out.push_back(s);
  }
  return out;
}

struct SftRun {
  std::vector<double> losses;
  std::vector<double> norms;
  std::vector<at::Tensor> weights;
};

SftRun sft_steps(int replicas, ShardMode shard, bool checkpointing) {
  const std::vector<SftSample> samples = sft_samples();
  std::vector<const SftSample*> batch;
  for (const SftSample& s : samples) batch.push_back(&s);
  Qwen3LM model = random_lm(tiny_config(), 17);
  SftTrainerOptions o;
  o.activation_checkpointing = checkpointing;  // the trainer sets it on the model
  o.optimizer.lr = 1e-3;
  o.optimizer.grad_clip_norm = 0.5;  // below the norms seen here: the global clip is exercised
  o.seed = 8;
  o.data_parallel.devices.assign(static_cast<std::size_t>(replicas), c10::Device(at::kCPU));
  // Small buckets of odd sizes: many buckets, most not a multiple of 3 elements.
  o.data_parallel.buckets.first_bucket_bytes = o.data_parallel.buckets.bucket_bytes = 2044;
  o.data_parallel.shard = shard;
  auto trainer = SftTrainer::create(model, o);
  EXPECT_TRUE(trainer.ok()) << trainer.status().to_string();
  SftRun out;
  if (!trainer.ok()) return out;
  for (int step = 0; step < 4; ++step) {
    auto stats = (*trainer)->step(batch, 0);
    EXPECT_TRUE(stats.ok()) << stats.status().to_string();
    if (!stats.ok()) return out;
    EXPECT_EQ(stats->replicas, replicas);
    out.losses.push_back(stats->loss);
    out.norms.push_back(stats->grad_norm);
  }
  out.weights = weights(model);
  return out;
}

TEST(OptimizerShardSftTest, StepsOnOneToFourShardedReplicasEqualTheReplicatedStepsOnOne) {
  for (bool checkpointing : {false, true}) {
    SCOPED_TRACE(checkpointing ? "activation checkpointing" : "plain");
    const SftRun one = sft_steps(1, ShardMode::kReplica, checkpointing);
    ASSERT_EQ(one.losses.size(), 4u);
    EXPECT_GT(one.norms.front(), 0.5);  // clipped
    for (int replicas : {1, 2, 3, 4}) {
      SCOPED_TRACE("sharded over " + std::to_string(replicas));
      const SftRun sharded = sft_steps(replicas, ShardMode::kOptimizer, checkpointing);
      ASSERT_EQ(sharded.losses.size(), 4u);
      for (std::size_t step = 0; step < 4; ++step) {
        EXPECT_NEAR(sharded.losses[step], one.losses[step], 1e-5 * std::abs(one.losses[step]));
        EXPECT_NEAR(sharded.norms[step], one.norms[step], 1e-5 * one.norms[step]);
      }
      EXPECT_LT(max_difference(sharded.weights, one.weights), kWeightTolerance);
    }
  }
  // And the steps trained: some weights moved by two steps' lr or more, far beyond the tolerance.
  EXPECT_GT(max_difference(sft_steps(1, ShardMode::kReplica, false).weights,
                           weights(random_lm(tiny_config(), 17))),
            2e-3);
}

// Sharded parameters (with activation checkpointing, which they need): the 5 forwards of each
// step are shared 3/2, 2/2/1 or 2/1/1/1, so the ranks with fewer repeat one with a zero weight.
// A layer's gradients are summed over the ranks forward by forward rather than after each
// rank's own sum, another grouping of the same float32 terms: measured on this CPU at most
// 2.3e-6 from one replica's weights and 9.2e-6 from as many replicas' (the replicated path's own
// difference), losses within 7e-8 relative; kWeightTolerance and 1e-5 relative hold them.
TEST(ShardedParametersSftTest, StepsOnOneToFourReplicasEqualTheReplicatedSteps) {
  const SftRun one = sft_steps(1, ShardMode::kReplica, true);
  ASSERT_EQ(one.losses.size(), 4u);
  for (int replicas : {1, 2, 3, 4}) {
    SCOPED_TRACE("parameters sharded over " + std::to_string(replicas));
    const SftRun sharded = sft_steps(replicas, ShardMode::kParameters, true);
    const SftRun replicated = sft_steps(replicas, ShardMode::kReplica, true);
    ASSERT_EQ(sharded.losses.size(), 4u);
    for (std::size_t step = 0; step < 4; ++step) {
      EXPECT_NEAR(sharded.losses[step], one.losses[step], 1e-5 * std::abs(one.losses[step]));
      EXPECT_NEAR(sharded.losses[step], replicated.losses[step], 1e-5 * std::abs(one.losses[step]));
      EXPECT_NEAR(sharded.norms[step], one.norms[step], 1e-5 * one.norms[step]);
    }
    EXPECT_LT(max_difference(sharded.weights, one.weights), kWeightTolerance);
    EXPECT_LT(max_difference(sharded.weights, replicated.weights), kWeightTolerance);
  }
}

TEST(OptimizerShardSftTest, ShardedAndReplicatedStepsOnThreeReplicasAgreeClosely) {
  // The same sums in the same order: only the norm's grouping differs.
  const SftRun replicated = sft_steps(3, ShardMode::kReplica, false);
  const SftRun sharded = sft_steps(3, ShardMode::kOptimizer, false);
  ASSERT_EQ(sharded.losses.size(), 4u);
  EXPECT_LT(max_difference(sharded.weights, replicated.weights), 1e-6);
}

// TraceRL samples written out by hand (trace_layout.h): prompts and responses of different
// lengths over blocks of 4, every token unmasked at one of the 4 denoising steps, sampling
// log-probs near the tiny model's, advantages of both signs.
std::vector<TraceSample> trace_samples() {
  std::vector<TraceSample> out;
  const std::vector<double> advantages = {1.0, -1.0, 0.5, -0.25};
  for (std::size_t i = 0; i < advantages.size(); ++i) {
    TraceSample s;
    for (std::size_t k = 0; k < 3 + i; ++k) s.prompt.push_back(static_cast<std::int64_t>(1 + k));
    for (std::size_t k = 0; k < 9 + 2 * i; ++k) {
      s.response.push_back(static_cast<std::int64_t>((11 * i + 5 * k) % 60));
      s.unmask_steps.push_back(static_cast<std::int32_t>((3 * k + i) % 4));
      s.old_log_probs.push_back(-4.0F - 0.1F * static_cast<float>(k % 5));
    }
    s.advantage = advantages[i];
    out.push_back(std::move(s));
  }
  return out;
}

PolicyTrainerOptions trace_options(int replicas, ShardMode shard) {
  PolicyTrainerOptions o = testing_util::tiny_trainer_options();
  o.optimizer.lr = 1e-3;
  o.optimizer.grad_accumulation = 4;  // one micro-batch per sample, for every replica count
  o.loss.ppo_epochs = 2;
  o.importance_cap = 2.0;
  o.data_parallel.devices.assign(static_cast<std::size_t>(replicas), c10::Device(at::kCPU));
  o.data_parallel.buckets.first_bucket_bytes = o.data_parallel.buckets.bucket_bytes = 2044;
  o.data_parallel.shard = shard;
  return o;
}

TEST(OptimizerShardTraceRlTest, UpdatesOnOneToFourShardedReplicasEqualTheReplicatedUpdateOnOne) {
  std::vector<PolicyUpdateStats> stats;
  std::vector<std::vector<at::Tensor>> after;
  std::vector<std::pair<int, ShardMode>> runs = {{1, ShardMode::kReplica}};
  // The parameters too (trace_options keeps the activation checkpointing they need): updates
  // with rescoring forwards on GPU 0 between the PPO epochs' steps.
  for (ShardMode shard : {ShardMode::kOptimizer, ShardMode::kParameters}) {
    for (int replicas : {1, 2, 3, 4}) runs.emplace_back(replicas, shard);
  }
  for (const auto& [replicas, shard] : runs) {
    SCOPED_TRACE(std::to_string(replicas) + " " + config::enum_to_name(shard));
    Qwen3LM model = random_lm(tiny_config(), 3);
    const std::vector<TraceSample> samples = trace_samples();
    auto trainer = PolicyTrainer::create(model, trace_options(replicas, shard));
    ASSERT_TRUE(trainer.ok()) << trainer.status().to_string();
    ASSERT_EQ((*trainer)->replicas(), replicas);
    for (int update = 0; update < 2; ++update) {  // two updates of two PPO epochs each
      auto done = (*trainer)->update(samples);
      ASSERT_TRUE(done.ok()) << done.status().to_string();
      stats.push_back(*done);
    }
    after.push_back(weights(model));
  }
  for (std::size_t k = 1; k < after.size(); ++k) {
    EXPECT_LT(max_difference(after[k], after[0]), kWeightTolerance) << "run " << k;
    for (std::size_t u = 0; u < 2; ++u) {
      const PolicyUpdateStats& a = stats[2 * k + u];
      const PolicyUpdateStats& b = stats[u];
      EXPECT_NEAR(a.loss, b.loss, 1e-5 * std::abs(b.loss) + 1e-9);
      EXPECT_NEAR(a.grad_norm, b.grad_norm, 1e-5 * b.grad_norm);
      EXPECT_NEAR(a.mean_ratio, b.mean_ratio, 1e-6);
      EXPECT_EQ(a.scored_tokens, b.scored_tokens);
    }
  }
  EXPECT_GT(max_difference(after[0], weights(random_lm(tiny_config(), 3))), 1e-4);
}

// The resume state: each of three ranks writes its own file; a new trainer on the saved weights
// (as a resume makes one) reads them back and its next update is the uninterrupted run's. With
// sharded parameters the files carry each rank's chunks of the layers, which are the weights: a
// trainer whose layers start elsewhere gets the saved ones back on GPU 0 when it loads them.
class ShardedResumeTest : public ::testing::TestWithParam<ShardMode> {};

TEST_P(ShardedResumeTest, TheResumeStateIsAFilePerRankAndResumesTheSameRun) {
  const ShardMode shard = GetParam();
  const std::string state =
      ::testing::TempDir() + "/sharded_" + config::enum_to_name(shard) + "_optimizer.pt";
  for (int r = 0; r < 3; ++r) std::filesystem::remove(OptimizerShard::shard_file(state, r));
  Qwen3LM model = random_lm(tiny_config(), 3);
  const std::vector<TraceSample> samples = trace_samples();
  auto trainer = PolicyTrainer::create(model, trace_options(3, shard));
  ASSERT_TRUE(trainer.ok()) << trainer.status().to_string();
  ASSERT_TRUE((*trainer)->update(samples).ok());
  ASSERT_TRUE((*trainer)->save_optimizer_state(state).ok());
  for (int r = 0; r < 3; ++r) {
    EXPECT_TRUE(std::filesystem::exists(OptimizerShard::shard_file(state, r))) << r;
  }
  EXPECT_EQ(OptimizerShard::shard_file(state, 0), state);  // what the resume folder looks for
  const std::vector<at::Tensor> saved = weights(model);
  ASSERT_TRUE((*trainer)->update(samples).ok());
  const std::vector<at::Tensor> uninterrupted = weights(model);

  Qwen3LM resumed = random_lm(tiny_config(), 3);
  {
    at::NoGradGuard no_grad;
    std::vector<at::Tensor> ps = resumed->parameters();
    for (std::size_t i = 0; i < ps.size(); ++i) ps[i].copy_(saved[i]);
    if (shard == ShardMode::kParameters) {
      for (auto& layer : resumed->model->layers) {
        for (at::Tensor& p : layer->parameters()) p.zero_();
      }
    }
  }
  auto again = PolicyTrainer::create(resumed, trace_options(3, shard));
  ASSERT_TRUE(again.ok());
  Status loaded = (*again)->load_optimizer_state(state);
  ASSERT_TRUE(loaded.ok()) << loaded.to_string();
  EXPECT_EQ((*again)->steps_taken(), (*trainer)->steps_taken() / 2);
  EXPECT_EQ(max_difference(weights(resumed), saved), 0.0);
  ASSERT_TRUE((*again)->update(samples).ok());
  EXPECT_EQ(max_difference(weights(resumed), uninterrupted), 0.0);

  // On another number of GPUs, or from a replicated run's file: refused, naming why.
  Qwen3LM other = random_lm(tiny_config(), 3);
  auto two = PolicyTrainer::create(other, trace_options(2, shard));
  ASSERT_TRUE(two.ok());
  Status refused = (*two)->load_optimizer_state(state);
  EXPECT_EQ(refused.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(refused.message().find("resharding is not supported"), std::string::npos)
      << refused.to_string();
  const std::string replicated = ::testing::TempDir() + "/replicated_optimizer.pt";
  auto one = PolicyTrainer::create(other, trace_options(1, ShardMode::kReplica));
  ASSERT_TRUE(one.ok());
  ASSERT_TRUE((*one)->save_optimizer_state(replicated).ok());
  refused = (*two)->load_optimizer_state(replicated);
  EXPECT_EQ(refused.code(), StatusCode::kInvalidArgument) << refused.to_string();
}

INSTANTIATE_TEST_SUITE_P(Modes, ShardedResumeTest,
                         ::testing::Values(ShardMode::kOptimizer, ShardMode::kParameters));

// A file of the other sharded mode on as many GPUs: its chunks are not this mode's.
TEST(ShardedResumeModesTest, TheOptimizerModesFileDoesNotLoadWithShardedParameters) {
  const std::string state = ::testing::TempDir() + "/optimizer_mode_for_parameters.pt";
  Qwen3LM model = random_lm(tiny_config(), 3);
  auto optimizer_only = PolicyTrainer::create(model, trace_options(2, ShardMode::kOptimizer));
  ASSERT_TRUE(optimizer_only.ok());
  ASSERT_TRUE((*optimizer_only)->save_optimizer_state(state).ok());
  Qwen3LM other = random_lm(tiny_config(), 3);
  auto parameters = PolicyTrainer::create(other, trace_options(2, ShardMode::kParameters));
  ASSERT_TRUE(parameters.ok());
  Status refused = (*parameters)->load_optimizer_state(state);
  EXPECT_EQ(refused.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(refused.message().find("resharding is not supported"), std::string::npos)
      << refused.to_string();
}

TEST(OptimizerShardDataParallelTest, TheLearnersSettingChoosesIt) {
  DataParallelSettings settings;
  auto replicated = data_parallel_options(settings, c10::Device(at::kCPU));
  ASSERT_TRUE(replicated.ok());
  EXPECT_EQ(replicated->shard, ShardMode::kReplica);  // the default
  settings.shard = ShardMode::kOptimizer;
  auto sharded = data_parallel_options(settings, c10::Device(at::kCPU));
  ASSERT_TRUE(sharded.ok());
  EXPECT_EQ(sharded->shard, ShardMode::kOptimizer);
  settings.shard = ShardMode::kParameters;
  auto layers = data_parallel_options(settings, c10::Device(at::kCPU));
  ASSERT_TRUE(layers.ok());
  EXPECT_EQ(layers->shard, ShardMode::kParameters);
}

TEST(OptimizerShardDataParallelTest, EachRankHoldsItsChunkOfTheMastersOnly) {
  const std::int64_t model_numel = [] {
    std::int64_t n = 0;
    for (const at::Tensor& p : random_lm(tiny_config(), 4)->parameters()) n += p.numel();
    return n;
  }();
  for (int replicas : {1, 3, 4}) {
    std::vector<at::Tensor> params;
    Qwen3LM model = random_lm(tiny_config(), 4);
    InProcessGroup group(replicas, std::chrono::seconds(5));
    BucketPlanOptions buckets;
    buckets.first_bucket_bytes = buckets.bucket_bytes = 2044;
    auto shard = OptimizerShard::create(model->parameters(), group.rank(replicas - 1), buckets,
                                        OptimizerOptions{}, false);
    ASSERT_TRUE(shard.ok()) << shard.status().to_string();
    // Its 1/N of every bucket, each padded by fewer than N elements.
    EXPECT_GE((*shard)->master_numel() * replicas, model_numel);
    EXPECT_LT(
        (*shard)->master_numel() * replicas,
        model_numel + replicas * static_cast<std::int64_t>((*shard)->reducer().bucket_count()));
  }
}

}  // namespace
}  // namespace dice
