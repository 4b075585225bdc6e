// dice-rollout: a rollout worker. Loads the policy (learner.init_checkpoint where set, else
// rollout.model_path: rollout/worker_start.h; Hugging Face layout) onto its GPU in bf16, connects
// to the learner, and answers RolloutRequests with sampled Candidates (block diffusion with
// traces, rollout/sampler.h); WeightsUpdate messages swap the weights (a checkpoint folder, or an
// NCCL broadcast from the learner: rollout/nccl_weight_receiver.h).
//
//   dice-rollout --config configs/local.yaml --worker-index 0 [--metrics-port 9200] [overrides]
//
// Without a CUDA device it says so and exits 4 (kExitNoDevice): sampling a 4B model on the CPU
// would not finish a step, and a rollout worker never pretends. rollout.device cpu samples on the
// CPU instead, in fp32, for the tiny models of tests and toy runs (tools/up on a machine without a
// GPU).
#include <torch/cuda.h>

#include <iostream>

#include "common/exit_codes.h"
#include "common/log.h"
#include "model/checkpoint/weights_checksum.h"
#include "model/device_memory.h"
#include "model/weights.h"
#include "net/service/worker_loop.h"
#include "rollout/kv_slot_budget.h"
#include "rollout/rollout_worker.h"
#include "rollout/worker_start.h"

namespace {

// The sampler's slots from the GPU's memory (rollout/kv_slot_budget.h), after the weights are
// loaded on GPU 0. A driver that cannot be asked leaves max_batch as configured, with a warning.
dice::Status size_kv_cache(const dice::RolloutOptions& options, dice::Qwen3LMImpl& model,
                           dice::SamplerOptions& sampler) {
  using namespace dice;
  auto memory = cuda_device_memory(0);
  if (!memory.ok()) {
    DICE_LOG(Warn) << "cannot read the GPU's free memory; max_batch as configured"
                   << kv("max_batch", sampler.max_batch) << kv("why", memory.status().to_string());
    return Status::ok_status();
  }
  SlotBudgetInput in;
  in.model = model.config();
  in.dtype_bytes = static_cast<std::int64_t>(model.lm_head.element_size());
  in.max_sequence_length = sampler.max_sequence_length;
  in.max_prefill_tokens = sampler.max_prefill_tokens;
  in.max_batch = sampler.max_batch;
  in.gpu_memory_fraction = options.gpu_memory_fraction;
  in.free_bytes = memory->free_bytes;
  in.total_bytes = memory->total_bytes;
  for (const at::Tensor& p : model.parameters()) in.weights_bytes += p.nbytes();
  DICE_ASSIGN_OR_RETURN(SlotBudget budget, kv_slot_budget(in));
  sampler.max_batch = budget.slots;
  DICE_LOG(Info) << "KV cache sized from GPU memory" << kv("slots", budget.slots)
                 << kv("budget", budget.describe(in));
  return Status::ok_status();
}

int run(dice::service::ServiceContext& context) {
  using namespace dice;
  const RolloutOptions& options = context.config.rollout;
  const bool cpu = options.device == RolloutDevice::kCpu;
  if (!cpu && !torch::cuda::is_available()) {
    std::cerr << "dice-rollout: no CUDA device visible (CUDA_VISIBLE_DEVICES='"
              << (std::getenv("CUDA_VISIBLE_DEVICES") ? std::getenv("CUDA_VISIBLE_DEVICES") : "")
              << "', LibTorch built " << (torch::cuda::device_count() ? "with" : "with or without")
              << " CUDA): a rollout worker needs a GPU (rollout.device cpu samples tiny models "
                 "on the CPU); not starting\n";
    return kExitNoDevice;
  }
  if (cpu) {
    DICE_LOG(Warn) << "rollout.device cpu: sampling on the CPU in fp32 (tiny models only)";
  }
  const std::string& initial = initial_policy_path(context.config);
  auto tokenizer = tokenizer::Tokenizer::load(initial + "/tokenizer.json");
  if (!tokenizer.ok()) {
    std::cerr << "dice-rollout: " << tokenizer.status().to_string() << "\n";
    return 2;
  }
  torch::NoGradGuard no_grad;
  auto model =
      load_qwen3_lm(initial, cpu ? c10::TensorOptions().dtype(at::kFloat)
                                 : c10::TensorOptions().dtype(at::kBFloat16).device(at::kCUDA, 0));
  if (!model.ok()) {
    std::cerr << "dice-rollout: " << model.status().to_string() << "\n";
    return 2;
  }
  auto sampler = sampler_options_for(options, (*model)->config(), tokenizer.value());
  if (!sampler.ok()) {
    std::cerr << "dice-rollout: " << sampler.status().to_string() << "\n";
    return 2;
  }
  sampler->seed = sampler_seed(context.config.learner.seed, context.worker_index.value_or(0));
  if (!cpu) {
    Status sized = size_kv_cache(options, **model, *sampler);
    if (!sized.ok()) {
      std::cerr << "dice-rollout: " << sized.to_string() << "\n";
      return 2;
    }
  }
  // The initial policy's checksum, reported with every candidate until new weights come.
  auto checkpoint = Checkpoint::open(initial);
  const std::uint64_t checksum = checkpoint.ok() ? weights_checksum(checkpoint.value()) : 0;
  auto engine = RolloutEngine::start(model.value(), sampler.value(), 0, checksum,
                                     checkpoint.ok() ? initial : "");
  if (!engine.ok()) {
    std::cerr << "dice-rollout: " << engine.status().to_string() << "\n";
    return 2;
  }
  // Enough groups in hand to keep the batch full while finished groups are replaced.
  const int group = std::max(1, context.config.learner.group_size);
  const auto capacity = static_cast<std::uint32_t>(std::max(2, 2 * sampler->max_batch / group));
  auto loop_options = service::worker_loop_options(context, schema::Role::ROLLOUT, capacity);
  if (!loop_options.ok()) {
    std::cerr << "dice-rollout: " << loop_options.status().to_string() << "\n";
    return 2;
  }
  loop_options->transport.gpu_slots = {"0"};
  auto shutdown = service::ShutdownSignal::install();
  if (!shutdown.ok()) {
    std::cerr << "dice-rollout: " << shutdown.status().to_string() << "\n";
    return 1;
  }
  service::MetricsRegistry registry;
  RolloutWorker worker(**engine, tokenizer.value(), loop_options->transport.worker_id, registry,
                       options.abort_on_weight_update);
  DICE_LOG(Info) << "rollout worker ready" << kv("model", initial)
                 << kv("max_batch", sampler->max_batch) << kv("capacity", capacity);
  if (options.weight_sync != WeightSync::kCheckpoint) {
    worker.enable_nccl(
        std::make_unique<NcclWeightReceiver>(model.value(), loop_options->transport.worker_id));
    DICE_LOG(Info) << "NCCL weight broadcasts accepted" << kv("nccl", nccl::describe_nccl());
  }
  return service::run_worker_loop_with_replies(
      *loop_options, registry, **shutdown,
      [&](const wire::Decoded<schema::Envelope>& work, service::ResultSink& sink) {
        return worker.handle(work, sink);
      },
      [&](const wire::Decoded<schema::Envelope>& message, service::ResultSink& sink) {
        worker.handle_control(message, sink);
      });
}

}  // namespace

int main(int argc, char** argv) {
  return dice::service::run_service_main("rollout", argc, argv, run, std::cout, std::cerr);
}
