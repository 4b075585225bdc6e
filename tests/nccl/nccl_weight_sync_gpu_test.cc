// The NCCL weight broadcast between two real processes on one node: this test is the learner
// (rank 0, GPU 0, a real WorkDispatcher socket); nccl_rollout_test_double is a rollout worker
// (rank 1, GPU 1) that learns the unique id from the WeightsUpdate on that socket.
//   - the worker ends up with bitwise the learner's bf16 weights and the new policy version;
//   - a worker SIGKILLed mid-broadcast costs the learner a Timeout within the deadline, and the
//     pusher falls back to the checkpoint folder (no hang, no error for the run).
// Needs 2 CUDA GPUs and a build with NCCL; skips with the reason otherwise.
#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <thread>

#include "common/remove_tree.h"
#include "learner/push/nccl_weight_pusher.h"
#include "learner/push/weight_sync_plan.h"
#include "model/torch_compat.h"
#include "model/weights.h"
#include "net/transport/work_dispatcher.h"
#include "tests/model/model_test_util.h"
#include "tests/support/child_process.h"

namespace dice {
namespace {

using std::chrono::milliseconds;
using testing_util::ChildProcess;

class NcclWeightSyncGpuTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!nccl::built_with_nccl()) GTEST_SKIP() << "built without NCCL (cmake DICE_NCCL)";
    if (compat::cuda_device_count() < 2) {
      GTEST_SKIP() << "needs 2 CUDA GPUs, sees " << compat::cuda_device_count() << " ("
                   << compat::describe_torch() << ")";
    }
    out_ =
        (std::filesystem::temp_directory_path() / ("dice_nccl_gpu_" + std::to_string(::getpid())))
            .string();
    std::filesystem::create_directories(out_);
    auto dispatcher = transport::WorkDispatcher::start(transport::DispatcherOptions());
    ASSERT_TRUE(dispatcher.ok()) << dispatcher.status().to_string();
    dispatcher_ = std::move(dispatcher).value();
    torch::NoGradGuard no_grad;
    model_ = testing_util::random_lm(testing_util::tiny_config(), 1);
    model_->to(c10::Device(at::kCUDA, 0), at::kBFloat16);
  }
  void TearDown() override {
    if (dispatcher_) dispatcher_->close();
    if (!out_.empty()) remove_tree(out_).ignore();
  }

  std::unique_ptr<ChildProcess> start_worker(const std::string& mode) {
    auto child = std::make_unique<ChildProcess>(
        DICE_NCCL_ROLLOUT_TEST_DOUBLE,
        std::vector<std::string>{dispatcher_->endpoint(), out_, mode}, out_ + "/worker.log");
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (dispatcher_->stats().workers < 1 && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(milliseconds(10));
    }
    EXPECT_EQ(dispatcher_->stats().workers, 1u) << "the worker never said Hello";
    return child;
  }

  std::vector<std::string> ranks() {
    std::vector<std::string> ids;
    for (const auto& w : dispatcher_->stats().worker_list) ids.push_back(w.worker_id);
    return assign_ranks(ids);
  }

  std::string log() {
    std::ifstream in(out_ + "/worker.log");
    return std::string(std::istreambuf_iterator<char>(in), {});
  }

  // A pusher that broadcasts by NCCL with `timeout` for each step.
  NcclWeightPusher nccl_pusher(milliseconds timeout) {
    WeightsPushOptions options;
    options.mode = WeightSync::kNccl;
    options.timeout = timeout;
    return NcclWeightPusher(model_, options);
  }

  static PolicyUpdate update_to(std::uint64_t version, const std::string& checkpoint_dir) {
    PolicyUpdate update;
    update.ran = true;
    update.policy_version = version;
    update.checkpoint_dir = checkpoint_dir;
    return update;
  }

  std::string out_;
  std::unique_ptr<transport::WorkDispatcher> dispatcher_;
  Qwen3LM model_{nullptr};
};

TEST_F(NcclWeightSyncGpuTest, WorkerGetsBitwiseWeightsAndTheNewVersion) {
  auto worker = start_worker("apply");
  NcclWeightPusher pusher = nccl_pusher(milliseconds(60000));
  const PolicyUpdate update = update_to(5, out_ + "/unused");  // the folder must not be needed
  ASSERT_EQ(ranks(), std::vector<std::string>{"gpu-test/rollout/0"});
  Status pushed = pusher.push_nccl(update, *dispatcher_, ranks());
  ASSERT_TRUE(pushed.ok()) << pushed.to_string() << "\nworker log:\n" << log();
  ASSERT_EQ(worker->wait_exit(std::chrono::seconds(120)), 0) << log();

  std::ifstream version(out_ + "/version");
  std::uint64_t got = 0;
  version >> got;
  EXPECT_EQ(got, 5u);
  auto received = load_qwen3_lm(out_ + "/model", c10::TensorOptions().dtype(at::kBFloat16));
  ASSERT_TRUE(received.ok()) << received.status().to_string();
  const auto sent = hf_named_parameters(*model_);
  const auto have = hf_named_parameters(**received);
  ASSERT_EQ(sent.size(), have.size());
  for (std::size_t i = 0; i < sent.size(); ++i) {
    const at::Tensor a = sent[i].tensor.cpu();
    const at::Tensor b = have[i].tensor;
    ASSERT_EQ(a.sizes(), b.sizes()) << sent[i].name;
    EXPECT_EQ(std::memcmp(a.data_ptr(), b.data_ptr(), a.numel() * a.element_size()), 0)
        << sent[i].name << " differs";
  }
}

TEST_F(NcclWeightSyncGpuTest, KilledWorkerCostsATimeoutNotAHang) {
  auto worker = start_worker("stall");
  NcclWeightPusher pusher = nccl_pusher(milliseconds(10000));
  const PolicyUpdate update = update_to(6, out_ + "/fallback");
  // Kill the worker once it has joined the communicator and the broadcast is under way.
  std::thread killer([&] {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (!std::filesystem::exists(out_ + "/joined") &&
           std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(milliseconds(10));
    }
    std::this_thread::sleep_for(milliseconds(500));
    worker->kill();
  });
  const auto started = std::chrono::steady_clock::now();
  Status pushed = pusher.push_nccl(update, *dispatcher_, ranks());
  const auto seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  killer.join();
  // The worker joined the communicator before it was killed: the failure is the broadcast's.
  EXPECT_TRUE(std::filesystem::exists(out_ + "/joined")) << log();
  ASSERT_FALSE(pushed.ok()) << log();
  EXPECT_TRUE(pushed.code() == StatusCode::kTimeout || pushed.code() == StatusCode::kInternal)
      << pushed.to_string();
  // Communicator set-up and the broadcast each get the 10 s deadline; a hang would run to ctest's.
  EXPECT_LT(seconds, 25.0) << pushed.to_string();

  // The full push falls back to the checkpoint folder, succeeds, and turns NCCL off.
  Status fallback = pusher.push(update, *dispatcher_);
  EXPECT_TRUE(fallback.ok()) << fallback.to_string();
}

}  // namespace
}  // namespace dice
