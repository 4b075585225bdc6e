// A rollout worker's handling of WeightsUpdate messages (apply_weights_update) on a tiny random
// model on the CPU: an NCCL update whose tensor list does not fit the model is an Error to the
// learner and the old version stays; one this worker cannot take (not listed, no GPU, no NCCL
// receiver) falls back to the update's checkpoint folder. The broadcast itself needs GPUs:
// tests/nccl/nccl_weight_sync_gpu_test.cc.
#include "rollout/nccl_weight_receiver.h"

#include <ATen/ATen.h>
#include <capnp/message.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <thread>

#include "common/remove_tree.h"
#include "model/weights.h"
#include "model/weights/weight_specs.h"
#include "rollout/rollout_worker.h"
#include "tests/model/model_test_util.h"

namespace dice {
namespace {

using testing_util::random_lm;
using testing_util::tiny_config;

class FakeSink : public service::ResultSink {
 public:
  schema::Envelope::Builder init_envelope(capnp::MessageBuilder& message) override {
    return message.initRoot<schema::Envelope>();
  }
  Status send(capnp::MessageBuilder& message) override {
    auto body = message.getRoot<schema::Envelope>().asReader().getBody();
    if (body.which() == schema::Envelope::Body::ERROR) {
      EXPECT_EQ(body.getError().getWorkId(), 0u);
      errors.push_back(body.getError().getMessage().cStr());
    }
    return Status::ok_status();
  }
  std::vector<std::string> errors;
};

SamplerOptions tiny_sampling() {
  SamplerOptions o;
  o.sampling.temperature = 0;
  o.sampling.max_new_tokens = 8;
  o.sampling.stop_token_ids = {};
  o.mask_token_id = tiny_config().mask_token_id;
  o.max_batch = 2;
  o.max_sequence_length = 64;
  return o;
}

bool wait_for_version(RolloutEngine& engine, std::uint64_t version) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (engine.policy_version() != version && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return engine.policy_version() == version;
}

class NcclWeightReceiverTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = (std::filesystem::temp_directory_path() /
            ("dice_nccl_receiver_" + std::to_string(::getpid())))
               .string();
    std::filesystem::create_directories(dir_ + "/v3");
    newer_ = random_lm(tiny_config(), 2);
    Status saved = save_qwen3_lm(*newer_, dir_ + "/v3");
    ASSERT_TRUE(saved.ok()) << saved.to_string();
    model_ = random_lm(tiny_config(), 1);
    auto engine = RolloutEngine::start(model_, tiny_sampling(), 1);
    ASSERT_TRUE(engine.ok()) << engine.status().to_string();
    engine_ = std::move(engine).value();
    receiver_ = std::make_unique<NcclWeightReceiver>(model_, "node/rollout/0");
  }
  void TearDown() override {
    engine_.reset();
    remove_tree(dir_).ignore();
  }

  // A WeightsUpdate{v3, nccl} whose tensor list describes `shapes_of`.
  schema::WeightsUpdate::Reader offer(Qwen3LM shapes_of, std::vector<std::string> workers) {
    auto update = message_->initRoot<schema::WeightsUpdate>();
    update.setPolicyVersion(3);
    auto nccl = update.initNccl();
    const std::string id(nccl::kUniqueIdBytes, '\x07');
    nccl.setUniqueId(kj::arrayPtr(reinterpret_cast<const kj::byte*>(id.data()), id.size()));
    nccl.setWorldSize(static_cast<std::uint32_t>(workers.size() + 1));
    auto ids = nccl.initWorkerIds(static_cast<unsigned>(workers.size()));
    for (unsigned i = 0; i < ids.size(); ++i) ids.set(i, workers[i]);
    auto specs = weights::broadcast_specs(*shapes_of, at::kFloat);
    EXPECT_TRUE(specs.ok());
    weights::write_specs(*specs, nccl.initTensors(static_cast<unsigned>(specs->size())));
    nccl.setFallbackDir(dir_ + "/v3");
    nccl.setTimeoutMs(1000);
    return update.asReader();
  }

  bool holds(Qwen3LM expected) {
    const auto a = hf_named_parameters(*model_);
    const auto b = hf_named_parameters(*expected);
    for (std::size_t i = 0; i < a.size(); ++i) {
      if (!at::equal(a[i].tensor, b[i].tensor)) return false;
    }
    return true;
  }

  std::string dir_;
  Qwen3LM model_{nullptr};
  Qwen3LM newer_{nullptr};
  std::unique_ptr<RolloutEngine> engine_;
  std::unique_ptr<NcclWeightReceiver> receiver_;
  // Behind a pointer: its destructor may throw, which a test fixture's may not.
  std::unique_ptr<capnp::MallocMessageBuilder> message_ =
      std::make_unique<capnp::MallocMessageBuilder>();
  FakeSink sink_;
};

TEST_F(NcclWeightReceiverTest, MismatchedTensorListIsAnErrorAndKeepsTheOldWeights) {
  ModelConfig other = tiny_config();
  other.intermediate_size = 40;
  Qwen3LM before = random_lm(tiny_config(), 1);
  Status s = apply_weights_update(offer(random_lm(other, 3), {"node/rollout/0"}), *engine_,
                                  receiver_.get(), false, sink_);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.to_string();
  ASSERT_EQ(sink_.errors.size(), 1u);
  EXPECT_NE(sink_.errors[0].find("mlp.gate_proj.weight"), std::string::npos) << sink_.errors[0];
  EXPECT_NE(sink_.errors[0].find("staying on policy version 1"), std::string::npos);
  EXPECT_FALSE(receiver_->connected());                         // nothing joined
  std::this_thread::sleep_for(std::chrono::milliseconds(100));  // the fallback must NOT come
  EXPECT_EQ(engine_->policy_version(), 1u);
  EXPECT_TRUE(holds(before));
}

TEST_F(NcclWeightReceiverTest, NotListedLoadsTheFallbackFolderQuietly) {
  Status s = apply_weights_update(offer(model_, {"node/rollout/7"}), *engine_, receiver_.get(),
                                  false, sink_);
  EXPECT_TRUE(s.ok()) << s.to_string();
  EXPECT_TRUE(sink_.errors.empty());
  ASSERT_TRUE(wait_for_version(*engine_, 3));
  EXPECT_TRUE(holds(newer_));
}

TEST_F(NcclWeightReceiverTest, CpuWorkerReportsAndFallsBack) {
  Status s = apply_weights_update(offer(model_, {"node/rollout/0"}), *engine_, receiver_.get(),
                                  false, sink_);
  EXPECT_EQ(s.code(), StatusCode::kUnavailable) << s.to_string();
  ASSERT_EQ(sink_.errors.size(), 1u);
  EXPECT_NE(sink_.errors[0].find("NCCL weights v3 as rank 1 of 2"), std::string::npos)
      << sink_.errors[0];
  EXPECT_NE(sink_.errors[0].find("using " + dir_ + "/v3"), std::string::npos);
  ASSERT_TRUE(wait_for_version(*engine_, 3));
  EXPECT_TRUE(holds(newer_));
}

TEST_F(NcclWeightReceiverTest, WorkerWithoutReceiverFallsBack) {
  Status s =
      apply_weights_update(offer(model_, {"node/rollout/0"}), *engine_, nullptr, false, sink_);
  EXPECT_EQ(s.code(), StatusCode::kUnavailable);
  ASSERT_EQ(sink_.errors.size(), 1u);
  EXPECT_NE(sink_.errors[0].find("rollout.weight_sync checkpoint"), std::string::npos);
  ASSERT_TRUE(wait_for_version(*engine_, 3));
}

TEST_F(NcclWeightReceiverTest, OldVersionsAreIgnored) {
  auto update = message_->initRoot<schema::WeightsUpdate>();
  update.setPolicyVersion(1);
  update.initNccl().setFallbackDir(dir_ + "/v3");
  EXPECT_TRUE(
      apply_weights_update(update.asReader(), *engine_, receiver_.get(), false, sink_).ok());
  EXPECT_TRUE(sink_.errors.empty());
  EXPECT_EQ(engine_->policy_version(), 1u);
}

TEST_F(NcclWeightReceiverTest, CheckpointUpdatesAreUnchanged) {
  auto update = message_->initRoot<schema::WeightsUpdate>();
  update.setPolicyVersion(3);
  update.setCheckpointDir(dir_ + "/v3");
  EXPECT_TRUE(
      apply_weights_update(update.asReader(), *engine_, receiver_.get(), false, sink_).ok());
  ASSERT_TRUE(wait_for_version(*engine_, 3));
  EXPECT_TRUE(holds(newer_));
}

}  // namespace
}  // namespace dice
