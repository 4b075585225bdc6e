// Data-parallel training over NCCL on two GPUs against one GPU (issue 26 item 1): SFT steps on
// replicas on cuda:0 and cuda:1 give the loss and weights of the same steps on cuda:0 alone (the
// TraceRL update shares the replicas and the reducer; its equality on CPU replicas is
// policy_trainer_test's). The model is the tiny one in float32, so the tolerance is float32's order
// of additions (the gradients are summed in another order), not bf16's. Skips with fewer than two
// GPUs, saying so. With learner.data_parallel.shard: optimizer the same steps go through
// ncclReduceScatter and ncclAllGather (optimizer_shard.h), on one GPU through a one-rank group.
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

TEST(DataParallelGpuTest, SftStepsOnTwoGpusEqualTheStepsOnOne) {
  DICE_SKIP_WITHOUT_TWO_GPUS();
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
  const std::vector<std::pair<int, ShardMode>> runs = {{1, ShardMode::kReplica},
                                                       {2, ShardMode::kReplica},
                                                       {1, ShardMode::kOptimizer},
                                                       {2, ShardMode::kOptimizer}};
  for (const auto& [n, shard] : runs) {
    SCOPED_TRACE(std::to_string(n) + (shard == ShardMode::kOptimizer ? " sharded" : ""));
    Qwen3LM model = model_on(0);
    SftTrainerOptions o;
    o.optimizer.lr = 1e-3;
    o.seed = 4;
    o.data_parallel.devices = gpus(n);
    o.data_parallel.buckets.first_bucket_bytes = o.data_parallel.buckets.bucket_bytes = 4092;
    o.data_parallel.shard = shard;
    auto trainer = SftTrainer::create(model, o);
    ASSERT_TRUE(trainer.ok()) << trainer.status().to_string();
    losses.emplace_back();
    for (int step = 0; step < 3; ++step) {
      auto stats = (*trainer)->step(batch, 0);
      ASSERT_TRUE(stats.ok()) << stats.status().to_string();
      EXPECT_EQ(stats->replicas, n);
      if (n == 2) {
        EXPECT_GT(stats->buckets_overlapped, 0u);
      }
      losses.back().push_back(stats->loss);
    }
    weights.push_back(model->lm_head.detach().cpu());
  }
  for (std::size_t k = 1; k < runs.size(); ++k) {
    for (std::size_t step = 0; step < 3; ++step) {
      EXPECT_NEAR(losses[k][step], losses[0][step], 1e-5 * std::abs(losses[0][step])) << k;
    }
    EXPECT_LT((weights[k] - weights[0]).abs().max().item<double>(), 1e-5) << k;
  }
}

}  // namespace
}  // namespace dice
