// dice-reward: a reward worker. Connects to the learner, takes EvalRequests, judges each candidate
// (extract, static checks, nvcc, sandboxed evaluation on a GPU slot) and sends back a Verdict.
//
//   dice-reward --config configs/local.yaml --worker-index 0 [--metrics-port 9300] [overrides]
//
// GPUs: the CUDA ordinals in CUDA_VISIBLE_DEVICES (the cluster sets it per worker), else GPU 0;
// reward.gpu_slots candidates run on each at once. Without a GPU the worker says so and exits 4
// (kExitNoDevice): a verdict without an evaluation would be a fake one. reward.mode compile_only or
// extraction_only (machines without a GPU) stop earlier, and every verdict says so.
#include <chrono>
#include <cstdlib>
#include <future>
#include <iostream>

#include "common/exit_codes.h"
#include "common/log.h"
#include "net/service/worker_loop.h"
#include "reward/reward_worker.h"

namespace {

int run(dice::service::ServiceContext& context) {
  using namespace dice;
  const RewardOptions& options = context.config.reward;
  const bool extraction_only = options.mode == RewardMode::kExtractionOnly;
  // Extraction-only compiles nothing: no compiler or torch headers to find.
  auto toolchain =
      extraction_only ? Result<Toolchain>(Toolchain{}) : probe_reward_toolchain(options);
  if (!toolchain.ok()) {
    DICE_LOG(Error) << "cannot judge candidates on this machine"
                    << kv("error", toolchain.status().to_string());
    std::cerr << "dice-reward: " << toolchain.status().to_string()
              << "\ndice-reward: a reward worker needs nvcc, PyTorch with CUDA and a GPU; "
                 "not starting (no verdict is better than a fake one)\n";
    return kExitNoDevice;
  }
  auto gpus = visible_gpus();
  if (!gpus.ok()) {
    std::cerr << "dice-reward: " << gpus.status().to_string() << "\n";
    return gpus.status().code() == StatusCode::kInvalidArgument ? kExitBadInput : kExitNoDevice;
  }
  const std::vector<std::string> slots = gpu_slot_names(*gpus, options.gpu_slots);
  const std::uint32_t capacity = reward_worker_capacity(options, slots.size());
  auto loop_options = service::worker_loop_options(context, schema::Role::REWARD, capacity);
  if (!loop_options.ok()) {
    std::cerr << "dice-reward: " << loop_options.status().to_string() << "\n";
    return 2;
  }
  loop_options->transport.gpu_slots = slots;
  auto shutdown = service::ShutdownSignal::install();
  if (!shutdown.ok()) {
    std::cerr << "dice-reward: " << shutdown.status().to_string() << "\n";
    return 1;
  }
  service::MetricsRegistry registry;
  RewardWorker worker(options, toolchain.value(),
                      PipelineIdentity{loop_options->transport.worker_id, slots}, registry);
  DICE_LOG(Info) << "reward worker ready" << kv("arch", toolchain->arch)
                 << kv("torch", toolchain->torch_version) << kv("slots", slots.size())
                 << kv("mode", dice::config::enum_to_name(options.mode));
  if (options.mode != RewardMode::kFull) {
    DICE_LOG(Warn) << "reward.mode is not full: rewards do not mean correct kernels"
                   << kv("mode", dice::config::enum_to_name(options.mode));
  }
  // The binding headers' PCHs are built beside the first work, not before it: the worker serves
  // at once, and builds that start meanwhile compile without them. Destroyed (joined) before
  // the worker: a SIGTERM in the worker's first seconds waits for them (21.8 s on the H200).
  auto prepared = std::async(std::launch::async, [&worker, extraction_only] {
    if (extraction_only) return;
    const auto start = std::chrono::steady_clock::now();
    const int ready = worker.compiler().prepare_binding_headers();
    DICE_LOG(Info)
        << "binding headers prepared" << kv("ready", ready)
        << kv("seconds",
              std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  });
  return service::run_worker_loop(
      *loop_options, registry, **shutdown,
      [&](const wire::Decoded<schema::Envelope>& work, service::ResultSink& sink) {
        return worker.handle(work, sink);
      },
      nullptr);
}

}  // namespace

int main(int argc, char** argv) {
  return dice::service::run_service_main("reward", argc, argv, run, std::cout, std::cerr);
}
