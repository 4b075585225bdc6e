// The learner's weight push (learner/push/): the checkpoint pusher tells a real worker connection,
// over a real ZeroMQ socket, which folder holds which version, under the learner's identity and
// the run's; make_weights_pusher gives that pusher for rollout.weight_sync checkpoint. (The NCCL
// pusher's broadcast is tests/nccl/nccl_weight_sync_gpu_test.cc, on two GPUs.)
#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "learner/push/nccl_weight_pusher.h"
#include "learner/push/weight_sync_plan.h"
#include "net/transport/work_dispatcher.h"
#include "net/transport/worker_connection.h"
#include "tests/model/model_test_util.h"
#include "tests/support/eventually.h"

namespace dice {
namespace {

using std::chrono::milliseconds;
using transport::WorkDispatcher;
using transport::WorkerConnection;

constexpr milliseconds kDeadline{10000};

bool eventually(const std::function<bool()>& condition) {
  return testing_util::eventually(condition, kDeadline);
}

class WeightsPusherTest : public ::testing::Test {
 protected:
  void SetUp() override {
    transport::DispatcherOptions options;
    options.bind_endpoint = "tcp://127.0.0.1:*";
    auto dispatcher = WorkDispatcher::start(options);
    ASSERT_TRUE(dispatcher.ok()) << dispatcher.status().to_string();
    dispatcher_ = std::move(dispatcher).value();
    transport::WorkerOptions worker;
    worker.learner_endpoint = dispatcher_->endpoint();
    worker.worker_id = "node/rollout/0";
    worker.capacity = 1;
    auto connection = WorkerConnection::start(worker);
    ASSERT_TRUE(connection.ok()) << connection.status().to_string();
    worker_ = std::move(connection).value();
    ASSERT_TRUE(eventually([&] { return dispatcher_->stats().workers == 1; }));
  }

  // Pushes version 7 of folder /ckpt/v7 with `pusher` and checks what the worker got.
  void expect_checkpoint_push(const WeightsPusher& pusher) {
    PolicyUpdate update;
    update.ran = true;
    update.policy_version = 7;
    update.checkpoint_dir = "/ckpt/v7";
    ASSERT_TRUE(pusher(update, *dispatcher_).ok());
    auto got = worker_->receive(kDeadline);
    ASSERT_TRUE(got.ok()) << got.status().to_string();
    auto envelope = got->root();
    EXPECT_EQ(std::string(envelope.getSenderId().cStr()), "learner-a");
    EXPECT_EQ(std::string(envelope.getRunId().cStr()), "run-1");
    ASSERT_TRUE(envelope.getBody().isWeightsUpdate());
    auto weights = envelope.getBody().getWeightsUpdate();
    EXPECT_EQ(weights.getPolicyVersion(), 7u);
    ASSERT_TRUE(weights.isCheckpointDir()) << "not a checkpoint folder push";
    EXPECT_EQ(std::string(weights.getCheckpointDir().cStr()), "/ckpt/v7");
    EXPECT_TRUE(weights.getAbortInFlight());
  }

  static WeightsPushOptions options(WeightSync mode) {
    WeightsPushOptions o;
    o.mode = mode;
    o.abort_in_flight = true;
    o.learner_id = "learner-a";
    o.run_id = "run-1";
    return o;
  }

  std::unique_ptr<WorkDispatcher> dispatcher_;
  std::unique_ptr<WorkerConnection> worker_;
};

TEST_F(WeightsPusherTest, TheCheckpointPusherNamesTheVersionsFolder) {
  expect_checkpoint_push(checkpoint_weights_pusher(options(WeightSync::kCheckpoint)));
}

TEST_F(WeightsPusherTest, WeightSyncCheckpointMakesTheCheckpointPusher) {
  Qwen3LM model = testing_util::random_lm(testing_util::tiny_config(), 3);
  expect_checkpoint_push(make_weights_pusher(options(WeightSync::kCheckpoint), model));
}

TEST_F(WeightsPusherTest, AutoWithoutAGpuFallsBackToTheCheckpointFolder) {
  // NCCL needs the policy on a GPU: on a CPU policy the plan is the checkpoint folder.
  Qwen3LM model = testing_util::random_lm(testing_util::tiny_config(), 3);
  expect_checkpoint_push(make_weights_pusher(options(WeightSync::kAuto), model));
}

}  // namespace
}  // namespace dice
