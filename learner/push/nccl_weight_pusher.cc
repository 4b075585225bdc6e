#include "learner/push/nccl_weight_pusher.h"

#include <ATen/ATen.h>

#include "common/log.h"
#include "learner/push/weight_sync_plan.h"
#include "model/weights/weight_specs.h"
#include "net/wire/envelope.h"

namespace dice {
namespace {

// Rollout workers hold their policy in bf16 (rollout/main.cc): what the broadcast carries.
constexpr c10::ScalarType kWireDtype = at::kBFloat16;

}  // namespace

NcclWeightPusher::NcclWeightPusher(Qwen3LM model, WeightsPushOptions options)
    : model_(std::move(model)), options_(std::move(options)) {}

NcclWeightPusher::~NcclWeightPusher() = default;

Status NcclWeightPusher::push(const PolicyUpdate& update, transport::WorkDispatcher& dispatcher) {
  WeightSyncInputs inputs;
  inputs.mode = options_.mode;
  inputs.learner_gpu = model_->parameters().front().device().is_cuda();
  inputs.nccl_built = nccl::built_with_nccl();
  for (const auto& worker : dispatcher.stats().worker_list)
    inputs.worker_ids.push_back(worker.worker_id);
  inputs.disabled_reason = disabled_;
  const WeightSyncPlan plan = plan_weight_sync(inputs);
  if (plan.nccl) {
    const auto started = std::chrono::steady_clock::now();
    Status sent = push_nccl(update, dispatcher, plan.ranks);
    if (sent.ok()) {
      last_reason_.clear();
      DICE_LOG(Info)
          << "weights broadcast by NCCL" << kv("policy_version", update.policy_version)
          << kv("workers", plan.ranks.size())
          << kv("seconds",
                std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
      return Status::ok_status();
    }
    comm_.reset();  // aborts; the next attempt (none this run) would need a new id
    unique_id_.clear();
    disabled_ = sent.to_string();
    DICE_LOG(Error) << "NCCL weight broadcast failed; pushing the checkpoint folder, and only "
                       "checkpoint folders for the rest of this run"
                    << kv("policy_version", update.policy_version) << kv("error", disabled_);
  } else if (plan.reason != last_reason_) {
    last_reason_ = plan.reason;
    DICE_LOG(Info) << "weights go as checkpoint folders" << kv("why", plan.reason);
  }
  return push_checkpoint_weights(dispatcher, options_, update);
}

Status NcclWeightPusher::push_nccl(const PolicyUpdate& update,
                                   transport::WorkDispatcher& dispatcher,
                                   const std::vector<std::string>& ranks) {
  if (comm_ && (ranks != ranks_ || !comm_->usable())) {
    comm_.reset();  // other workers now: a new communicator under a new id
    unique_id_.clear();
  }
  if (unique_id_.empty()) {
    DICE_ASSIGN_OR_RETURN(unique_id_, nccl::new_unique_id());
    ranks_ = ranks;
  }
  const int world = static_cast<int>(ranks.size()) + 1;
  DICE_ASSIGN_OR_RETURN(std::vector<weights::TensorSpec> specs,
                        weights::broadcast_specs(*model_, kWireDtype));
  std::vector<at::Tensor> tensors = weights::wire_tensors(*model_, kWireDtype);
  DICE_ASSIGN_OR_RETURN(weights::DeviceBuffers buffers, weights::device_buffers(tensors));

  capnp::MallocMessageBuilder message;
  auto weights = wire::init_envelope(message, options_.learner_id, options_.run_id)
                     .getBody()
                     .initWeightsUpdate();
  weights.setPolicyVersion(update.policy_version);
  weights.setAbortInFlight(options_.abort_in_flight);
  auto offer = weights.initNccl();
  offer.setUniqueId(
      kj::arrayPtr(reinterpret_cast<const kj::byte*>(unique_id_.data()), unique_id_.size()));
  offer.setWorldSize(static_cast<std::uint32_t>(world));
  offer.setRank(0);
  auto ids = offer.initWorkerIds(static_cast<unsigned>(ranks.size()));
  for (unsigned i = 0; i < ids.size(); ++i) ids.set(i, ranks[i]);
  weights::write_specs(specs, offer.initTensors(static_cast<unsigned>(specs.size())));
  offer.setFallbackDir(update.checkpoint_dir);
  offer.setTimeoutMs(static_cast<std::uint32_t>(options_.timeout.count()));
  DICE_RETURN_IF_ERROR(dispatcher.broadcast(wire::encode(message)));

  if (!comm_) {
    DICE_LOG(Info) << "setting up the NCCL weight broadcast" << kv("world_size", world)
                   << kv("id", nccl::unique_id_digest(unique_id_))
                   << kv("nccl", nccl::describe_nccl());
    DICE_ASSIGN_OR_RETURN(
        comm_, nccl::Communicator::create(unique_id_, world, 0, buffers.device, options_.timeout));
  }
  return comm_->broadcast(buffers.buffers, 0, options_.timeout);
}

WeightsPusher make_weights_pusher(const WeightsPushOptions& options, const Qwen3LM& model) {
  if (options.mode == WeightSync::kCheckpoint) return checkpoint_weights_pusher(options);
  auto pusher = std::make_shared<NcclWeightPusher>(model, options);
  return [pusher](const PolicyUpdate& update, transport::WorkDispatcher& dispatcher) {
    return pusher->push(update, dispatcher);
  };
}

}  // namespace dice
