// Data-parallel training on CPU replicas in one process (the in-process collective): the
// bucketed gradient sum is the gradient of the whole batch, it overlaps the backward when armed,
// misuse and a failing rank end in errors rather than wrong sums or hangs (with the optimizer
// replicated or sharded, or the parameters sharded too), and an SFT step on two replicas equals
// the step on one. With the parameters sharded, GPU 0 alone holds whole layers between steps.
#include "learner/parallel/data_parallel.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <stdexcept>
#include <thread>
#include <vector>

#include "learner/parallel/gradient_reducer.h"
#include "learner/parallel/in_process_collective.h"
#include "learner/train/sft_trainer.h"
#include "tests/model/model_test_util.h"

namespace dice {
namespace {

using testing_util::random_lm;
using testing_util::tiny_config;

// A batch of block-aligned training rows for the tiny model; each sample's loss is the sum of
// -log p(x_0) over its masked positions, scaled by 1 / (all samples' masked positions).
struct Row {
  at::Tensor x_t, x_0, masked;
};

std::vector<Row> rows(int count, std::uint64_t seed) {
  at::manual_seed(seed);
  std::vector<Row> out;
  for (int i = 0; i < count; ++i) {
    Row r;
    r.x_0 = at::randint(0, 60, {1, 8}, at::TensorOptions().dtype(at::kLong));
    r.masked = at::rand({8}) < 0.5;
    r.masked[7].fill_(true);  // at least one
    r.x_t =
        at::where(r.masked.unsqueeze(0), at::full_like(r.x_0, tiny_config().mask_token_id), r.x_0);
    out.push_back(r);
  }
  return out;
}

std::int64_t masked_total(const std::vector<Row>& batch) {
  std::int64_t n = 0;
  for (const Row& r : batch) n += r.masked.sum().item<std::int64_t>();
  return n;
}

void accumulate(Qwen3LMImpl& model, const Row& r, double scale) {
  at::Tensor logits = model.forward_training(r.x_t, r.x_0)[0];
  at::Tensor lp = logits.log_softmax(-1).gather(1, r.x_0[0].unsqueeze(1)).squeeze(1);
  (-(lp.masked_select(r.masked)).sum() * scale).backward();
}

std::vector<at::Tensor> grads(Qwen3LMImpl& model) {
  std::vector<at::Tensor> out;
  for (const at::Tensor& p : model.parameters()) out.push_back(p.grad().clone());
  return out;
}

void expect_close(const std::vector<at::Tensor>& a, const std::vector<at::Tensor>& b,
                  double tolerance) {
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    EXPECT_LT((a[i] - b[i]).abs().max().item<double>(), tolerance) << "tensor " << i;
  }
}

// Three ranks, the batch's rows dealt round-robin (rank 2 gets one row, rank 0 three), each rank
// one backward per row, armed before its last; returns each rank's gradients after finish().
struct RankRun {
  std::vector<std::vector<at::Tensor>> grads;
  std::vector<std::size_t> overlapped;
  std::vector<Status> finished;
};

RankRun run_ranks(const std::vector<Row>& batch, int world, bool checkpointing, bool arm,
                  std::int64_t bucket_bytes) {
  InProcessGroup group(world, std::chrono::seconds(20));
  std::vector<Qwen3LM> models;
  std::vector<std::unique_ptr<GradientReducer>> reducers;
  BucketPlanOptions buckets;
  buckets.first_bucket_bytes = bucket_bytes;
  buckets.bucket_bytes = bucket_bytes;
  for (int r = 0; r < world; ++r) {
    models.push_back(random_lm(tiny_config(), 21));  // the same weights on every rank
    models.back()->model->activation_checkpointing = checkpointing;
    for (at::Tensor& p : models.back()->parameters()) p.set_requires_grad(true);
    auto reducer = GradientReducer::create(models.back()->parameters(), group.rank(r), buckets);
    EXPECT_TRUE(reducer.ok()) << reducer.status().to_string();
    reducers.push_back(std::move(*reducer));
  }
  const double scale = 1.0 / static_cast<double>(masked_total(batch));
  RankRun out;
  out.grads.resize(static_cast<std::size_t>(world));
  out.overlapped.resize(static_cast<std::size_t>(world));
  out.finished.resize(static_cast<std::size_t>(world));
  std::vector<std::thread> threads;
  for (int r = 0; r < world; ++r) {
    threads.emplace_back([&, r] {
      const auto u = static_cast<std::size_t>(r);
      std::vector<std::size_t> mine;
      for (std::size_t i = u; i < batch.size(); i += static_cast<std::size_t>(world)) {
        mine.push_back(i);
      }
      reducers[u]->zero();
      for (std::size_t j = 0; j < mine.size(); ++j) {
        if (arm && j + 1 == mine.size()) reducers[u]->arm();
        accumulate(*models[u], batch[mine[j]], scale);
      }
      out.finished[u] = reducers[u]->finish();
      out.overlapped[u] = reducers[u]->started_in_backward();
      out.grads[u] = grads(*models[u]);
    });
  }
  for (std::thread& t : threads) t.join();
  return out;
}

std::vector<at::Tensor> one_process_grads(const std::vector<Row>& batch) {
  Qwen3LM model = random_lm(tiny_config(), 21);
  for (at::Tensor& p : model->parameters()) p.set_requires_grad(true);
  const double scale = 1.0 / static_cast<double>(masked_total(batch));
  for (const Row& r : batch) accumulate(*model, r, scale);
  return grads(*model);
}

TEST(GradientReducerTest, TheSumOverRanksIsTheWholeBatchsGradient) {
  const std::vector<Row> batch = rows(7, 3);
  const std::vector<at::Tensor> expected = one_process_grads(batch);
  for (bool checkpointing : {false, true}) {
    SCOPED_TRACE(checkpointing ? "activation checkpointing" : "plain");
    RankRun run = run_ranks(batch, 3, checkpointing, /*arm=*/true, /*bucket_bytes=*/4096);
    for (int r = 0; r < 3; ++r) {
      ASSERT_TRUE(run.finished[static_cast<std::size_t>(r)].ok())
          << run.finished[static_cast<std::size_t>(r)].to_string();
      expect_close(run.grads[static_cast<std::size_t>(r)], expected, 1e-6);
    }
    // Small buckets, armed: most were summed while the backward still ran.
    EXPECT_GT(run.overlapped[0], 1u);
  }
}

TEST(GradientReducerTest, UnarmedItSumsEverythingInFinishWithTheSameResult) {
  const std::vector<Row> batch = rows(4, 5);
  RankRun run = run_ranks(batch, 2, false, /*arm=*/false, 4096);
  ASSERT_TRUE(run.finished[0].ok()) << run.finished[0].to_string();
  EXPECT_EQ(run.overlapped[0], 0u);
  expect_close(run.grads[0], one_process_grads(batch), 1e-6);
  expect_close(run.grads[1], run.grads[0], 0.0 + 1e-12);
}

TEST(GradientReducerTest, ABackwardAfterItsBucketsWereSummedFailsInsteadOfSummingAPart) {
  InProcessGroup group(1, std::chrono::seconds(5));
  Qwen3LM model = random_lm(tiny_config(), 2);
  for (at::Tensor& p : model->parameters()) p.set_requires_grad(true);
  BucketPlanOptions tiny_buckets;
  tiny_buckets.first_bucket_bytes = tiny_buckets.bucket_bytes = 256;
  auto reducer = GradientReducer::create(model->parameters(), group.rank(0), tiny_buckets);
  ASSERT_TRUE(reducer.ok());
  const std::vector<Row> batch = rows(2, 9);
  (*reducer)->zero();
  (*reducer)->arm();
  accumulate(*model, batch[0], 1.0);
  accumulate(*model, batch[1], 1.0);  // armed twice: the buckets went with the first only
  Status finished = (*reducer)->finish();
  EXPECT_EQ(finished.code(), StatusCode::kInternal) << finished.to_string();
  EXPECT_NE(finished.message().find("second gradient"), std::string::npos);
}

TEST(GradientReducerTest, ItRefusesParametersWithoutGradients) {
  InProcessGroup group(1, std::chrono::seconds(5));
  std::vector<at::Tensor> params = {at::zeros({3})};
  auto reducer = GradientReducer::create(params, group.rank(0));
  EXPECT_EQ(reducer.status().code(), StatusCode::kInvalidArgument);
}

// The tiny model, checkpointed (sharded parameters need it; the other modes do not mind).
Qwen3LM checkpointed_lm(std::uint64_t seed) {
  Qwen3LM model = random_lm(tiny_config(), seed);
  model->model->activation_checkpointing = true;
  return model;
}

constexpr ShardMode kEveryShardMode[] = {ShardMode::kReplica, ShardMode::kOptimizer,
                                         ShardMode::kParameters};

// Any optimizer: replicated (the sum) or sharded (the reduce-scatter and all-gathers), and with
// the parameters sharded the forward's first all-gather of a layer is what waits.
TEST(DataParallelTest, AFailingRankEndsTheOthersWaitAtOnce) {
  const std::vector<Row> batch = rows(1, 6);
  for (ShardMode shard : kEveryShardMode) {
    SCOPED_TRACE(config::enum_to_name(shard));
    Qwen3LM model = checkpointed_lm(4);
    DataParallelOptions o;
    o.devices.assign(3, c10::Device(at::kCPU));
    o.timeout = std::chrono::seconds(60);
    o.shard = shard;
    auto dp = DataParallel::create(model, OptimizerOptions{}, false, o);
    ASSERT_TRUE(dp.ok()) << dp.status().to_string();
    const auto started = std::chrono::steady_clock::now();
    Status ran = (*dp)->run([&](int rank) -> Status {
      if (rank == 1) return Status::internal("rank 1's forward failed");
      try {
        (*dp)->masters(rank).zero_grad();
        accumulate(*(*dp)->replica(rank), batch[0], 1.0);
        (*dp)->masters(rank).step();  // waits for rank 1's sum, which never comes
      } catch (const std::exception& e) {
        return Status::internal(e.what());
      }
      return Status::ok_status();
    });
    EXPECT_FALSE(ran.ok());
    EXPECT_NE(ran.to_string().find("rank 1"), std::string::npos) << ran.to_string();
    EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(20));
  }
}

TEST(DataParallelTest, ARankThatNeverSumsCostsATimeoutNotAHang) {
  for (ShardMode shard : kEveryShardMode) {
    SCOPED_TRACE(config::enum_to_name(shard));
    Qwen3LM model = checkpointed_lm(4);
    DataParallelOptions o;
    o.devices = {c10::Device(at::kCPU), c10::Device(at::kCPU)};
    o.timeout = std::chrono::milliseconds(300);
    o.shard = shard;
    auto dp = DataParallel::create(model, OptimizerOptions{}, false, o);
    ASSERT_TRUE(dp.ok());
    Status ran = (*dp)->run([&](int rank) -> Status {
      if (rank == 1) return Status::ok_status();  // out of step: returns without its sum
      try {
        (*dp)->masters(rank).step();
      } catch (const c10::Error& e) {
        return Status::internal(e.what_without_backtrace());
      }
      return Status::ok_status();
    });
    EXPECT_FALSE(ran.ok());
    // With sharded parameters rank 1 goes on to gather GPU 0's layers, which meets rank 0's
    // reduce-scatter: an error at once instead of the wait.
    const char* why = shard == ShardMode::kParameters ? "out of step" : "within 300 ms";
    EXPECT_NE(ran.to_string().find(why), std::string::npos) << ran.to_string();
  }
}

// Decoder layers of `model` whose parameters hold their values now.
int whole_layers(Qwen3LMImpl& model) {
  int whole = 0;
  for (auto& layer : model.model->layers) {
    bool all = true;
    for (const at::Tensor& p : layer->parameters()) all = all && p.numel() > 0;
    whole += all ? 1 : 0;
  }
  return whole;
}

std::vector<at::Tensor> values(Qwen3LMImpl& model) {
  std::vector<at::Tensor> out;
  for (const at::Tensor& p : model.parameters()) out.push_back(p.detach().clone());
  return out;
}

// What reads the model between steps (checkpoint, weight push, the learner's own forwards) finds
// its whole weights on GPU 0, the caller's model; the other GPUs keep chunks only, and in a step
// every GPU has its hooks set and no whole layer to begin with.
TEST(DataParallelTest, UnderShardedParametersGpuZeroAloneHoldsWholeLayersBetweenSteps) {
  Qwen3LM model = checkpointed_lm(4);
  const std::vector<at::Tensor> initial = values(*model);
  DataParallelOptions o;
  o.devices.assign(3, c10::Device(at::kCPU));
  o.timeout = std::chrono::seconds(60);
  o.shard = ShardMode::kParameters;
  OptimizerOptions optimizer;
  optimizer.lr = 1e-3;
  auto dp = DataParallel::create(model, optimizer, false, o);
  ASSERT_TRUE(dp.ok()) << dp.status().to_string();
  ASSERT_TRUE((*dp)->passes_in_lockstep());
  expect_close(values(*model), initial, 1e-12);  // gathered back as they were
  for (int r = 1; r < 3; ++r) EXPECT_EQ(whole_layers(*(*dp)->replica(r)), 0) << r;

  const std::vector<Row> batch = rows(3, 6);
  std::vector<int> hooked(3, 0), whole_at_start(3, -1);
  Status ran = (*dp)->run([&](int rank) -> Status {
    const auto r = static_cast<std::size_t>(rank);
    Qwen3LM replica = (*dp)->replica(rank);
    hooked[r] = replica->model->parameter_hooks != nullptr ? 1 : 0;
    whole_at_start[r] = whole_layers(*replica);
    try {
      (*dp)->masters(rank).zero_grad();
      (*dp)->arm(rank);
      accumulate(*replica, batch[r], 1.0);
      (*dp)->masters(rank).step();
    } catch (const std::exception& e) {
      return Status::internal(e.what());
    }
    return Status::ok_status();
  });
  ASSERT_TRUE(ran.ok()) << ran.to_string();
  for (int r = 0; r < 3; ++r) {
    EXPECT_EQ(hooked[static_cast<std::size_t>(r)], 1) << r;
    EXPECT_EQ(whole_at_start[static_cast<std::size_t>(r)], 0) << r;
    EXPECT_EQ((*dp)->replica(r)->model->parameter_hooks, nullptr) << r;
  }
  EXPECT_EQ(whole_layers(*model), 2);
  EXPECT_EQ(whole_layers(*(*dp)->replica(1)), 0);
  EXPECT_EQ(whole_layers(*(*dp)->replica(2)), 0);
  // The step moved every layer's weights, and GPU 0's forward without hooks runs on them.
  const std::vector<at::Tensor> after = values(*model);
  double moved = 0;
  for (std::size_t i = 0; i < after.size(); ++i) {
    moved = std::max(moved, (after[i] - initial[i]).abs().max().item<double>());
  }
  EXPECT_GT(moved, 1e-4);
  EXPECT_TRUE(model->forward_training(batch[0].x_t, batch[0].x_0).isfinite().all().item<bool>());
}

TEST(DataParallelTest, ShardedParametersRefuseAModelWithoutActivationCheckpointing) {
  Qwen3LM model = random_lm(tiny_config(), 4);  // checkpointing off
  DataParallelOptions o;
  o.shard = ShardMode::kParameters;
  auto dp = DataParallel::create(model, OptimizerOptions{}, false, o);
  EXPECT_EQ(dp.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(dp.status().message().find("learner.data_parallel.shard"), std::string::npos);
  EXPECT_NE(dp.status().message().find("learner.activation_checkpointing"), std::string::npos)
      << dp.status().to_string();
}

// With shard: parameters every rank runs as many passes, the short ones padded with the filler.
TEST(DataParallelTest, RankPassesPadShortRanksOnlyInLockstep) {
  const std::vector<std::vector<std::size_t>> mine = {{0, 3}, {1}, {}};
  const auto own = rank_passes(mine, false, 1);
  ASSERT_EQ(own.size(), 3u);
  EXPECT_EQ(own[0].size(), 2u);
  EXPECT_EQ(own[1].size(), 1u);
  EXPECT_TRUE(own[2].empty());
  const auto even = rank_passes(mine, true, 1);
  for (const auto& passes : even) ASSERT_EQ(passes.size(), 2u);
  EXPECT_EQ(even[0][1].forward, 3u);
  EXPECT_FALSE(even[0][1].padding);
  EXPECT_EQ(even[1][0].forward, 1u);
  EXPECT_FALSE(even[1][0].padding);
  EXPECT_TRUE(even[1][1].padding);
  EXPECT_EQ(even[1][1].forward, 1u);
  EXPECT_TRUE(even[2][0].padding);
  EXPECT_TRUE(even[2][1].padding);
}

TEST(DataParallelTest, AnExceptionInARanksThreadIsAnErrorNotATermination) {
  Qwen3LM model = random_lm(tiny_config(), 4);
  DataParallelOptions o;
  o.devices = {c10::Device(at::kCPU), c10::Device(at::kCPU)};
  auto dp = DataParallel::create(model, OptimizerOptions{}, false, o);
  ASSERT_TRUE(dp.ok());
  Status ran = (*dp)->run([](int rank) -> Status {
    if (rank == 1) throw std::runtime_error("out of host memory");
    return Status::ok_status();
  });
  EXPECT_EQ(ran.code(), StatusCode::kInternal);
  EXPECT_NE(ran.message().find("rank 1: out of host memory"), std::string::npos) << ran.message();
}

TEST(DataParallelTest, TheFirstDeviceMustBeTheModels) {
  Qwen3LM model = random_lm(tiny_config(), 4);
  DataParallelOptions o;
  o.devices = {c10::Device(at::kCUDA, 0)};
  EXPECT_EQ(DataParallel::create(model, OptimizerOptions{}, false, o).status().code(),
            StatusCode::kInvalidArgument);
}

SftSample sample(std::int64_t first, std::int64_t response_length) {
  SftSample s;
  s.prompt = {1, 2, 3, 4, 5};
  for (std::int64_t i = 0; i < response_length; ++i) s.response.push_back((first + i) % 60);
  return s;
}

// Three SFT steps on one device and on two (or three) CPU replicas, same seed and data.
TEST(DataParallelSftTest, StepsOnSeveralReplicasEqualTheStepsOnOne) {
  std::vector<SftSample> samples;
  for (int i = 0; i < 5; ++i) samples.push_back(sample(7 * i, 6 + 3 * i));
  std::vector<const SftSample*> batch;
  for (const SftSample& s : samples) batch.push_back(&s);
  for (std::int64_t pack : {std::int64_t{0}, std::int64_t{24}}) {
    std::vector<std::vector<double>> losses;
    std::vector<std::vector<at::Tensor>> weights;
    for (int replicas : {1, 2, 3}) {
      SCOPED_TRACE("replicas " + std::to_string(replicas) + ", pack " + std::to_string(pack));
      Qwen3LM model = random_lm(tiny_config(), 17);
      SftTrainerOptions o;
      o.optimizer.lr = 1e-3;
      o.seed = 8;
      o.pack_length = pack;
      o.data_parallel.devices.assign(static_cast<std::size_t>(replicas), c10::Device(at::kCPU));
      o.data_parallel.buckets.first_bucket_bytes = o.data_parallel.buckets.bucket_bytes = 2048;
      auto trainer = SftTrainer::create(model, o);
      ASSERT_TRUE(trainer.ok()) << trainer.status().to_string();
      losses.emplace_back();
      for (int step = 0; step < 3; ++step) {
        auto stats = (*trainer)->step(batch, 0);
        ASSERT_TRUE(stats.ok()) << stats.status().to_string();
        EXPECT_EQ(stats->replicas, replicas);
        // The step's report of the overlap survives the optimizer's zero_grad: buckets of 2 KiB
        // start during the last backward on more than one replica.
        if (replicas > 1) {
          EXPECT_GT(stats->buckets_overlapped, 0u);
        }
        losses.back().push_back(stats->loss);
      }
      weights.emplace_back();
      for (const at::Tensor& p : model->parameters()) weights.back().push_back(p.detach().clone());
    }
    for (std::size_t k = 1; k < losses.size(); ++k) {
      for (std::size_t step = 0; step < 3; ++step) {
        EXPECT_NEAR(losses[k][step], losses[0][step], 1e-5 * std::abs(losses[0][step]));
      }
      expect_close(weights[k], weights[0], 1e-5);
    }
    // And it trained: the weights moved.
    Qwen3LM fresh = random_lm(tiny_config(), 17);
    EXPECT_GT((fresh->parameters()[0] - weights[0][0]).abs().max().item<double>(), 1e-4);
  }
}

}  // namespace
}  // namespace dice
