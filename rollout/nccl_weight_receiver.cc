#include "rollout/nccl_weight_receiver.h"

#include <memory>
#include <vector>

#include "common/log.h"
#include "model/weights/weight_specs.h"

namespace dice {

NcclWeightReceiver::NcclWeightReceiver(Qwen3LM model, std::string worker_id)
    : model_(std::move(model)), worker_id_(std::move(worker_id)) {}

Result<NcclWeightReceiver::Outcome> NcclWeightReceiver::receive(
    schema::WeightsUpdate::Reader update, RolloutEngine& engine, bool abort_in_flight) {
  const auto offer = update.getNccl();
  const std::uint64_t version = update.getPolicyVersion();
  const int world = static_cast<int>(offer.getWorldSize());
  int rank = static_cast<int>(offer.getRank());
  if (offer.getWorkerIds().size() > 0) {
    rank = -1;
    auto ids = offer.getWorkerIds();
    for (unsigned i = 0; i < ids.size(); ++i) {
      if (worker_id_ == ids[i].cStr()) rank = static_cast<int>(i) + 1;
    }
    if (rank < 0) return Outcome::kNotListed;
  }
  const std::string what = "NCCL weights v" + std::to_string(version) + " as rank " +
                           std::to_string(rank) + " of " + std::to_string(world);
  if (rank <= 0 || rank >= world) {
    return Status::invalid_argument(what + ": a worker's rank must be in [1, world size)");
  }
  // Before joining anything: a broadcast into a model of another shape would hang the others
  // or corrupt this one.
  DICE_RETURN_IF_ERROR(
      weights::validate_specs(weights::read_specs(offer.getTensors()), *model_).with_context(what));
  if (!nccl::built_with_nccl()) {
    return Status::unavailable(what + ": this worker was " + nccl::describe_nccl());
  }
  const c10::Device device = model_->parameters().front().device();
  if (!device.is_cuda()) {
    return Status::unavailable(what + ": this worker's weights are on " + device.str() +
                               "; NCCL needs a GPU");
  }
  std::vector<at::Tensor> staging = weights::staging_tensors(*model_);
  DICE_ASSIGN_OR_RETURN(weights::DeviceBuffers buffers, weights::device_buffers(staging));
  const std::chrono::milliseconds timeout(offer.getTimeoutMs() ? offer.getTimeoutMs() : 60000);
  const auto id = offer.getUniqueId();
  const std::string unique_id(reinterpret_cast<const char*>(id.begin()), id.size());
  if (comm_ && (comm_->unique_id() != unique_id || comm_->rank() != rank ||
                comm_->world_size() != world || !comm_->usable())) {
    comm_.reset();  // the learner started a new communicator (new workers, or a failure)
  }
  if (!comm_) {
    DICE_LOG(Info) << "joining the NCCL weight broadcast" << kv("rank", rank)
                   << kv("world_size", world) << kv("id", nccl::unique_id_digest(unique_id));
    DICE_ASSIGN_OR_RETURN(
        comm_, nccl::Communicator::create(unique_id, world, rank, buffers.device, timeout));
  }
  Status received = comm_->broadcast(buffers.buffers, 0, timeout);
  if (!received.ok()) {
    comm_.reset();
    return received.with_context(what);
  }
  auto staged = std::make_shared<std::vector<at::Tensor>>(std::move(staging));
  // The tensor list was checked against the model before joining and the staging tensors are
  // shaped from it, so nothing is left to refuse: any error from here on is mid-copy, and the
  // engine restores its held version. fallbackDir holds these same weights, for a later restore.
  engine.update_weights_with(
      [staged](Qwen3LMImpl& model, bool& copying) {
        copying = true;
        return weights::copy_into_model(*staged, model);
      },
      "nccl broadcast", version, abort_in_flight, offer.getFallbackDir().cStr());
  return Outcome::kReceived;
}

}  // namespace dice
