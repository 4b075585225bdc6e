// ParameterShards (learner/parallel/parameter_shards.h) on 1 to 4 CPU replicas joined by the
// in-process collective: with each rank's decoder layers sharded, a training forward and backward
// give the loss of the unsharded model on the same data, each rank's gradient chunk is that
// chunk of the sum over the ranks of the unsharded gradients, and no layer holds its full weights
// between uses; gather_all gives every rank the whole weights back (its own chunk a slice of
// them, not a second copy); a rank that fails ends the others' wait with an error instead of a
// hang; and OptimizerShard's steps with the layers sharded equal its steps with the optimizer
// sharded alone (ZeRO-3 against ZeRO-1/2).
#include "learner/parallel/parameter_shards.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <torch/csrc/autograd/grad_mode.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <memory>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "learner/parallel/gradient_reducer.h"
#include "learner/parallel/in_process_collective.h"
#include "learner/parallel/optimizer_shard.h"
#include "tests/learner/parallel/on_ranks.h"
#include "tests/model/model_test_util.h"

namespace dice {
namespace {

using testing_util::random_lm;
using testing_util::random_tokens;

// Buckets of the layers' operations: past any the gradient reducer would use.
constexpr std::size_t kFirstBucket = 1000;

Qwen3LM checkpointed_lm() {
  ModelConfig config = testing_util::tiny_config();
  config.num_hidden_layers = 3;
  Qwen3LM lm = random_lm(config, 21);
  lm->model->activation_checkpointing = true;  // the hooks' backward half needs it
  return lm;
}

struct Batch {
  at::Tensor x_t, x_0;
};

// Made on the test's thread: the global generator is not for several threads at once.
Batch batch_of_rank(int rank, const ModelConfig& config) {
  at::manual_seed(100 + rank);
  Batch b;
  b.x_0 = random_tokens(2, 12, config);
  b.x_t = b.x_0.masked_fill(at::rand({2, 12}) < 0.5, config.mask_token_id);
  return b;
}

at::Tensor training_loss(Qwen3LMImpl& lm, const Batch& b) {
  return lm.forward_training(b.x_t, b.x_0).log_softmax(-1).pow(2).mean();
}

// Layer `layer`'s gradients flattened in parameters() order.
at::Tensor layer_gradient(Qwen3LMImpl& lm, std::size_t layer) {
  std::vector<at::Tensor> grads;
  for (const at::Tensor& p : lm.model->layers[layer]->parameters()) {
    grads.push_back(p.grad().reshape(-1));
  }
  return at::cat(grads);
}

using testing_util::on_ranks;

class ParameterShardsTest : public ::testing::TestWithParam<int> {};

TEST_P(ParameterShardsTest, ShardedReplicasMatchTheUnshardedOnesAndSumGradientsByChunk) {
  const int world = GetParam();
  const ModelConfig config = checkpointed_lm()->config();
  std::vector<Batch> batches;
  for (int r = 0; r < world; ++r) batches.push_back(batch_of_rank(r, config));

  // Unsharded: each rank's loss and gradients, and per layer the sum over ranks (rank order, as
  // the collective sums).
  std::vector<double> want_loss;
  std::vector<at::Tensor> want_sum(3);
  std::vector<std::vector<NamedParameter>> plain_params;
  std::vector<Qwen3LM> plain;
  for (int r = 0; r < world; ++r) {
    plain.push_back(checkpointed_lm());
    at::Tensor loss = training_loss(*plain.back(), batches[r]);
    loss.backward();
    want_loss.push_back(loss.item<double>());
    for (std::size_t i = 0; i < 3; ++i) {
      at::Tensor g = layer_gradient(*plain.back(), i);
      want_sum[i] = want_sum[i].defined() ? want_sum[i] + g : g;
    }
  }

  InProcessGroup group(world, std::chrono::seconds(20));
  std::vector<Qwen3LM> models;
  std::vector<std::unique_ptr<ParameterShards>> shards;
  for (int r = 0; r < world; ++r) {
    models.push_back(checkpointed_lm());
    shards.push_back(
        std::make_unique<ParameterShards>(*models[r]->model, group.rank(r), kFirstBucket));
    models[r]->model->parameter_hooks = shards[r].get();
    ASSERT_EQ(shards[r]->materialized_layers(), 0);
  }
  std::vector<double> got_loss(world);
  std::vector<std::string> errors(world);
  on_ranks(world, [&](int r) {
    try {
      at::Tensor loss = training_loss(*models[r], batches[r]);
      loss.backward();
      got_loss[r] = loss.item<double>();
    } catch (const std::exception& e) {
      errors[r] = e.what();
    }
  });

  for (int r = 0; r < world; ++r) {
    ASSERT_EQ(errors[r], "") << "rank " << r;
    EXPECT_NEAR(got_loss[r], want_loss[r], 1e-6) << "rank " << r;
    EXPECT_EQ(shards[r]->materialized_layers(), 0) << "rank " << r << " left full weights";
    for (int64_t i = 0; i < 3; ++i) {
      const int64_t chunk = shards[r]->chunk_numel(i);
      ASSERT_EQ(chunk * world >= want_sum[i].numel(), true);
      at::Tensor padded = at::zeros({chunk * world}, want_sum[i].options());
      padded.narrow(0, 0, want_sum[i].numel()).copy_(want_sum[i]);
      EXPECT_TRUE(
          at::allclose(shards[r]->gradient(i), padded.narrow(0, r * chunk, chunk), 1e-5, 1e-6))
          << "rank " << r << ", layer " << i;
    }
    // Embeddings, the final norm and lm_head stay whole, their gradients in place.
    const std::vector<NamedParameter> want = hf_named_parameters(*plain[r]);
    const std::vector<NamedParameter> got = hf_named_parameters(*models[r]);
    for (std::size_t k = 0; k < want.size(); ++k) {
      if (want[k].name.rfind("model.layers.", 0) == 0) continue;
      EXPECT_TRUE(at::allclose(got[k].tensor.grad(), want[k].tensor.grad(), 1e-5, 1e-6))
          << want[k].name;
    }
  }

  // The whole weights back on every rank, as they were.
  std::vector<std::vector<at::Tensor>> chunks(world);
  for (int r = 0; r < world; ++r) {
    for (int64_t i = 0; i < 3; ++i) chunks[r].push_back(shards[r]->values(i).clone());
  }
  std::vector<Status> gathered(world);
  on_ranks(world, [&](int r) { gathered[r] = shards[r]->gather_all(); });
  const std::vector<NamedParameter> initial = hf_named_parameters(*checkpointed_lm());
  for (int r = 0; r < world; ++r) {
    ASSERT_TRUE(gathered[r].ok()) << gathered[r].to_string();
    EXPECT_EQ(shards[r]->materialized_layers(), 3);
    const std::vector<NamedParameter> got = hf_named_parameters(*models[r]);
    for (std::size_t k = 0; k < initial.size(); ++k) {
      EXPECT_TRUE(at::equal(got[k].tensor, initial[k].tensor))
          << "rank " << r << " " << initial[k].name;
    }
    // While a layer is whole the rank's chunk is a slice of its buffer, not a second copy; once
    // released the chunk has storage of its own again, the same values.
    for (int64_t i = 0; i < 3; ++i) {
      const at::Tensor first = models[r]->model->layers[i]->parameters().front();
      EXPECT_EQ(shards[r]->values(i).storage().data(), first.storage().data())
          << "rank " << r << ", layer " << i;
    }
    shards[r]->release_all();
    EXPECT_EQ(shards[r]->materialized_layers(), 0);
    for (int64_t i = 0; i < 3; ++i) {
      const at::Tensor& own = shards[r]->values(i);
      EXPECT_EQ(static_cast<int64_t>(own.storage().nbytes()), own.numel() * own.element_size());
      EXPECT_TRUE(at::equal(own, chunks[r][i])) << "rank " << r << ", layer " << i;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Replicas, ParameterShardsTest, ::testing::Values(1, 2, 3, 4));

TEST(ParameterShardsFailureTest, ARankThatFailsEndsTheOthersForwardWithAnError) {
  InProcessGroup group(2, std::chrono::seconds(20));
  Qwen3LM lm = checkpointed_lm();
  const Batch batch = batch_of_rank(0, lm->config());
  ParameterShards shards(*lm->model, group.rank(0), kFirstBucket);
  lm->model->parameter_hooks = &shards;
  std::thread failing([&] { group.rank(1)->abort(Status::internal("its forward threw")); });
  std::string error;
  try {
    training_loss(*lm, batch);
  } catch (const std::exception& e) {
    error = e.what();
  }
  failing.join();
  EXPECT_NE(error.find("all-gather of layer 0"), std::string::npos) << error;
  EXPECT_NE(error.find("its forward threw"), std::string::npos) << error;
}

// Two optimizer steps on N replicas, each on its own batch: the weights after them (gathered
// back, with sharded parameters) and the global gradient norms.
struct Steps {
  std::vector<std::vector<double>> norms;        // per rank, per step
  std::vector<std::vector<at::Tensor>> weights;  // per rank, parameters() order
  std::vector<std::string> errors;
};

Steps two_steps(int world, bool sharded_parameters) {
  const ModelConfig config = checkpointed_lm()->config();
  std::vector<Batch> batches;
  for (int r = 0; r < world; ++r) batches.push_back(batch_of_rank(r, config));
  OptimizerOptions optimizer;
  optimizer.lr = 1e-3;
  optimizer.grad_clip_norm = 0.05;  // below the norms seen here: the global clip is exercised
  BucketPlanOptions buckets;
  buckets.first_bucket_bytes = buckets.bucket_bytes = 2044;  // many buckets of odd sizes
  InProcessGroup group(world, std::chrono::seconds(20));
  std::vector<Qwen3LM> models;
  std::vector<std::unique_ptr<ParameterShards>> layers(world);
  std::vector<std::unique_ptr<OptimizerShard>> shards;
  Steps out;
  out.norms.resize(world);
  out.errors.resize(world);
  for (int r = 0; r < world; ++r) {
    models.push_back(checkpointed_lm());
    std::vector<at::Tensor> params = models[r]->parameters();
    if (sharded_parameters) {
      layers[r] = std::make_unique<ParameterShards>(*models[r]->model, group.rank(r), kFirstBucket);
      models[r]->model->parameter_hooks = layers[r].get();
      std::set<const c10::TensorImpl*> in_layers;
      for (auto& layer : models[r]->model->layers) {
        for (const at::Tensor& p : layer->parameters()) in_layers.insert(p.unsafeGetTensorImpl());
      }
      params.erase(std::remove_if(params.begin(), params.end(),
                                  [&](const at::Tensor& p) {
                                    return in_layers.count(p.unsafeGetTensorImpl()) != 0;
                                  }),
                   params.end());
    }
    auto shard =
        OptimizerShard::create(params, group.rank(r), buckets, optimizer, false, layers[r].get());
    EXPECT_TRUE(shard.ok()) << shard.status().to_string();
    if (!shard.ok()) return out;
    shards.push_back(std::move(*shard));
  }
  on_ranks(world, [&](int r) {
    try {
      for (int step = 0; step < 2; ++step) {
        shards[r]->zero_grad();
        shards[r]->reducer().arm();
        training_loss(*models[r], batches[r]).backward();
        out.norms[r].push_back(shards[r]->step(optimizer.lr));
      }
      if (layers[r]) {
        const Status gathered = layers[r]->gather_all();
        if (!gathered.ok()) throw std::runtime_error(gathered.to_string());
      }
    } catch (const std::exception& e) {
      out.errors[r] = e.what();
    }
  });
  for (int r = 0; r < world; ++r) {
    std::vector<at::Tensor> weights;
    for (const at::Tensor& p : models[r]->parameters()) weights.push_back(p.detach().clone());
    out.weights.push_back(std::move(weights));
  }
  return out;
}

TEST(ParameterShardsOptimizerTest, StepsWithShardedParametersEqualStepsWithShardedOptimizerOnly) {
  for (int world : {1, 2, 3, 4}) {
    SCOPED_TRACE("replicas: " + std::to_string(world));
    const Steps optimizer_only = two_steps(world, false);
    const Steps parameters_too = two_steps(world, true);
    for (int r = 0; r < world; ++r) {
      ASSERT_EQ(optimizer_only.errors[r], "") << "rank " << r;
      ASSERT_EQ(parameters_too.errors[r], "") << "rank " << r;
      ASSERT_EQ(parameters_too.norms[r].size(), 2u);
      for (std::size_t step = 0; step < 2; ++step) {
        EXPECT_GT(optimizer_only.norms[r][step], 0.05);  // clipped
        EXPECT_NEAR(parameters_too.norms[r][step], optimizer_only.norms[r][step],
                    1e-5 * optimizer_only.norms[r][step]);
      }
      double most = 0;
      for (std::size_t k = 0; k < optimizer_only.weights[r].size(); ++k) {
        const at::Tensor& a = optimizer_only.weights[r][k];
        const at::Tensor& b = parameters_too.weights[r][k];
        ASSERT_TRUE(a.sizes().equals(b.sizes())) << "parameter " << k;
        most = std::max(most, (a - b).abs().max().item<double>());
      }
      // The same sums in the same rank order; only the norm's grouping differs.
      EXPECT_LT(most, 1e-6) << "rank " << r;
    }
  }
  // And the steps trained: the weights moved far beyond that tolerance.
  const Steps one = two_steps(1, true);
  const std::vector<at::Tensor> initial = checkpointed_lm()->parameters();
  double moved = 0;
  for (std::size_t k = 0; k < initial.size(); ++k) {
    moved = std::max(moved, (one.weights[0][k] - initial[k]).abs().max().item<double>());
  }
  EXPECT_GT(moved, 1e-3);
}

}  // namespace
}  // namespace dice
