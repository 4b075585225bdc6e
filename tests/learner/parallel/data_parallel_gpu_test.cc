// Data-parallel training on GPUs against one GPU (issue 26 item 1, issue 53): SFT steps under each
// learner.data_parallel.shard mode give the loss and weights of the same steps as one replica on
// cuda:0. On one GPU the optimizer and parameters modes run their one-rank group's path (what
// update_bench --shard all times); on cuda:0 and cuda:1 the sums, reduce-scatters and all-gathers
// go over NCCL (optimizer_shard.h, parameter_shards.h). The TraceRL update shares the replicas and
// the collectives; its equality on CPU replicas is policy_trainer_test's and data_parallel_test's.
// The model is the tiny one in float32, so the tolerance is float32's order of additions (the
// gradients are summed in another order), not bf16's. Each case skips without the GPUs it needs,
// saying so.
#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "learner/train/sft_trainer.h"
#include "model/nccl/nccl_communicator.h"
#include "model/torch_compat.h"
#include "tests/model/model_test_util.h"

namespace dice {
namespace {

using testing_util::random_lm;
using testing_util::tiny_config;

#define DICE_SKIP_WITHOUT_A_GPU()                                           \
  if (compat::cuda_device_count() < 1) {                                    \
    GTEST_SKIP() << "no CUDA device (" << compat::describe_torch()          \
                 << "): the one-GPU data-parallel test needs one; skipped"; \
  }

#define DICE_SKIP_WITHOUT_TWO_GPUS()                                                            \
  if (compat::cuda_device_count() < 2 || !nccl::built_with_nccl()) {                            \
    GTEST_SKIP() << compat::cuda_device_count() << " CUDA device(s), " << nccl::describe_nccl() \
                 << ": the two-GPU data-parallel test needs two GPUs "                          \
                    "and NCCL; skipped";                                                        \
  }

Qwen3LM model_on(int device) {
  Qwen3LM cpu = random_lm(tiny_config(), 31);
  Qwen3LM gpu(tiny_config(), at::TensorOptions().dtype(at::kFloat).device(at::kCUDA, device));
  at::NoGradGuard no_grad;
  auto from = cpu->parameters();
  auto to = gpu->parameters();
  for (std::size_t i = 0; i < from.size(); ++i) to[i].copy_(from[i]);
  return gpu;
}

std::vector<c10::Device> gpus(int n) {
  std::vector<c10::Device> out;
  for (int d = 0; d < n; ++d) out.emplace_back(at::kCUDA, static_cast<c10::DeviceIndex>(d));
  return out;
}

// A run of SFT steps: on this many GPUs, under this shard mode.
struct GpuRun {
  int gpus = 1;
  ShardMode shard = ShardMode::kReplica;
};

// Three SFT steps of the same batch from the same weights for each run; every run's losses and
// weights (all of them: under parameters, GPU 0 holds the whole layers between steps) equal the
// first run's.
void expect_runs_agree(const std::vector<GpuRun>& runs) {
  std::vector<SftSample> samples(6);
  for (std::size_t i = 0; i < samples.size(); ++i) {
    samples[i].prompt = {1, 2, 3, 4, 5};
    for (std::int64_t t = 0; t < 8 + static_cast<std::int64_t>(i); ++t) {
      samples[i].response.push_back((11 * static_cast<std::int64_t>(i) + t) % 60);
    }
  }
  std::vector<const SftSample*> batch;
  for (const SftSample& s : samples) batch.push_back(&s);
  std::vector<std::vector<double>> losses;
  std::vector<at::Tensor> weights;
  for (const GpuRun& run : runs) {
    SCOPED_TRACE(std::to_string(run.gpus) + " GPU(s), shard " + config::enum_to_name(run.shard));
    Qwen3LM model = model_on(0);
    SftTrainerOptions o;  // activation checkpointing on: shard: parameters needs it
    o.optimizer.lr = 1e-3;
    o.seed = 4;
    o.data_parallel.devices = gpus(run.gpus);
    o.data_parallel.buckets.first_bucket_bytes = o.data_parallel.buckets.bucket_bytes = 4092;
    o.data_parallel.shard = run.shard;
    auto trainer = SftTrainer::create(model, o);
    ASSERT_TRUE(trainer.ok()) << trainer.status().to_string();
    losses.emplace_back();
    for (int step = 0; step < 3; ++step) {
      auto stats = (*trainer)->step(batch, 0);
      ASSERT_TRUE(stats.ok()) << stats.status().to_string();
      EXPECT_EQ(stats->replicas, run.gpus);
      if (run.gpus == 2) {
        EXPECT_GT(stats->buckets_overlapped, 0u);
      }
      losses.back().push_back(stats->loss);
    }
    std::vector<at::Tensor> flat;
    for (const at::Tensor& p : model->parameters()) flat.push_back(p.detach().flatten().cpu());
    weights.push_back(at::cat(flat));
  }
  for (std::size_t k = 1; k < runs.size(); ++k) {
    for (std::size_t step = 0; step < 3; ++step) {
      EXPECT_NEAR(losses[k][step], losses[0][step], 1e-5 * std::abs(losses[0][step])) << k;
    }
    // data_parallel_test's bound for shard: parameters on CPU replicas.
    EXPECT_LT((weights[k] - weights[0]).abs().max().item<double>(), 3e-5) << k;
  }
  // And the steps trained: the weights moved.
  Qwen3LM fresh = model_on(0);
  std::vector<at::Tensor> initial;
  for (const at::Tensor& p : fresh->parameters()) initial.push_back(p.detach().flatten().cpu());
  EXPECT_GT((at::cat(initial) - weights[0]).abs().max().item<double>(), 1e-4);
}

// The world-size-1 path of each mode on a single GPU (the one-rank group): the replica's steps.
TEST(DataParallelGpuTest, EveryShardModeOnOneGpuEqualsTheReplica) {
  DICE_SKIP_WITHOUT_A_GPU();
  expect_runs_agree(
      {{1, ShardMode::kReplica}, {1, ShardMode::kOptimizer}, {1, ShardMode::kParameters}});
}

TEST(DataParallelGpuTest, SftStepsOnTwoGpusEqualTheStepsOnOne) {
  DICE_SKIP_WITHOUT_TWO_GPUS();
  expect_runs_agree({{1, ShardMode::kReplica},
                     {2, ShardMode::kReplica},
                     {2, ShardMode::kOptimizer},
                     {2, ShardMode::kParameters}});
}

}  // namespace
}  // namespace dice
