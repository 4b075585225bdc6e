// The rollout side of nccl_weight_sync_gpu_test: a worker on GPU 1 holding a tiny random bf16
// model (seed 2) that connects to the learner's socket and takes one WeightsUpdate.
//
//   nccl_rollout_test_double <learner endpoint> <out dir> apply
//       apply it as dice-rollout does (apply_weights_update -> NcclWeightReceiver -> engine),
//       wait for the new version, write <out dir>/model (safetensors) and <out dir>/version
//   nccl_rollout_test_double <learner endpoint> <out dir> stall
//       join the communicator, write <out dir>/joined, then never take part in the broadcast
//       (the test SIGKILLs it there)
// Exit: 0 done, 1 failure (printed).
#include <ATen/ATen.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <thread>

#include "model/weights.h"
#include "net/transport/worker_connection.h"
#include "net/wire/envelope.h"
#include "rollout/rollout_worker.h"
#include "tests/model/model_test_util.h"

namespace {

using namespace dice;

class ConnectionSink : public service::ResultSink {
 public:
  explicit ConnectionSink(transport::WorkerConnection& c) : c_(c) {}
  schema::Envelope::Builder init_envelope(capnp::MessageBuilder& m) override {
    return c_.init_envelope(m);
  }
  Status send(capnp::MessageBuilder& m) override {
    return c_.send_result(wire::encode(m), std::chrono::seconds(5));
  }

 private:
  transport::WorkerConnection& c_;
};

int fail(const std::string& what) {
  std::cerr << "nccl_rollout_test_double: " << what << "\n";
  return 1;
}

int run(const std::string& endpoint, const std::string& out, const std::string& mode) {
  torch::NoGradGuard no_grad;
  Qwen3LM model = testing_util::random_lm(testing_util::tiny_config(), 2);
  model->to(c10::Device(at::kCUDA, 1), at::kBFloat16);
  transport::WorkerOptions options;
  options.learner_endpoint = endpoint;
  options.worker_id = "gpu-test/rollout/0";
  options.role = schema::Role::ROLLOUT;
  options.gpu_slots = {"1"};
  auto connection = transport::WorkerConnection::start(options);
  if (!connection.ok()) return fail(connection.status().to_string());
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (std::chrono::steady_clock::now() < deadline) {
    auto message = (*connection)->receive(std::chrono::milliseconds(200));
    if (!message.ok()) continue;
    auto body = message->root().getBody();
    if (body.which() != schema::Envelope::Body::WEIGHTS_UPDATE) continue;
    auto update = body.getWeightsUpdate();
    if (mode == "stall") {
      auto nccl = update.getNccl();
      const std::string id(reinterpret_cast<const char*>(nccl.getUniqueId().begin()),
                           nccl.getUniqueId().size());
      auto comm = nccl::Communicator::create(id, static_cast<int>(nccl.getWorldSize()), 1, 1,
                                             std::chrono::seconds(60));
      if (!comm.ok()) return fail(comm.status().to_string());
      std::ofstream(out + "/joined") << "1\n";
      std::this_thread::sleep_for(std::chrono::hours(1));  // killed here
      return 1;
    }
    SamplerOptions sampling;
    sampling.mask_token_id = testing_util::tiny_config().mask_token_id;
    sampling.sampling.max_new_tokens = 8;
    sampling.sampling.stop_token_ids = {};  // the defaults are Qwen3's ids, outside tiny's vocab
    sampling.max_batch = 2;
    sampling.max_sequence_length = 64;
    auto engine = RolloutEngine::start(model, sampling, 1);
    if (!engine.ok()) return fail(engine.status().to_string());
    NcclWeightReceiver receiver(model, options.worker_id);
    ConnectionSink sink(**connection);
    Status applied = apply_weights_update(update, **engine, &receiver, false, sink);
    if (!applied.ok()) return fail(applied.to_string());
    while ((*engine)->policy_version() != update.getPolicyVersion()) {
      if (std::chrono::steady_clock::now() > deadline) return fail("version never changed");
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    std::filesystem::create_directories(out + "/model");
    Status saved = save_qwen3_lm(*model, out + "/model");
    if (!saved.ok()) return fail(saved.to_string());
    std::ofstream(out + "/version") << (*engine)->policy_version() << "\n";
    return 0;
  }
  return fail("no WeightsUpdate within 120 s");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) return fail("usage: <learner endpoint> <out dir> apply|stall");
  return run(argv[1], argv[2], argv[3]);
}
