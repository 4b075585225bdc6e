#include "learner/push/weight_sync_plan.h"

#include <algorithm>

#include "common/log.h"
#include "net/wire/envelope.h"

namespace dice {

bool is_rollout_worker_id(const std::string& worker_id) {
  return worker_id.find("/rollout/") != std::string::npos;
}

std::vector<std::string> assign_ranks(std::vector<std::string> worker_ids) {
  worker_ids.erase(std::remove_if(worker_ids.begin(), worker_ids.end(),
                                  [](const std::string& id) { return !is_rollout_worker_id(id); }),
                   worker_ids.end());
  std::sort(worker_ids.begin(), worker_ids.end());
  worker_ids.erase(std::unique(worker_ids.begin(), worker_ids.end()), worker_ids.end());
  return worker_ids;
}

WeightSyncPlan plan_weight_sync(const WeightSyncInputs& in) {
  WeightSyncPlan plan;
  if (in.mode == WeightSync::kCheckpoint) {
    plan.reason = "rollout.weight_sync is checkpoint";
  } else if (!in.nccl_built) {
    plan.reason = "the learner was built without NCCL";
  } else if (!in.learner_gpu) {
    plan.reason = "the learner's policy is not on a GPU";
  } else if (!in.disabled_reason.empty()) {
    plan.reason = "an NCCL broadcast failed earlier in this run (" + in.disabled_reason + ")";
  } else {
    plan.ranks = assign_ranks(in.worker_ids);
    if (plan.ranks.empty()) {
      plan.reason = "no rollout worker is registered";
    } else {
      plan.nccl = true;
    }
  }
  return plan;
}

Status check_weight_sync_setting(WeightSync mode, bool learner_gpu, bool nccl_built) {
  if (mode != WeightSync::kNccl) return Status::ok_status();
  if (!nccl_built) {
    return Status::invalid_argument(
        "rollout.weight_sync: nccl, but this learner was built without NCCL (configure with "
        "DICE_NCCL=ON); use auto or checkpoint");
  }
  if (!learner_gpu) {
    return Status::invalid_argument(
        "rollout.weight_sync: nccl, but the learner's policy is not on a GPU (no CUDA device "
        "visible); use auto or checkpoint");
  }
  return Status::ok_status();
}

WeightsPushOptions weights_push_options(const RolloutOptions& rollout, const std::string& run_id) {
  WeightsPushOptions options;
  options.mode = rollout.weight_sync;
  options.timeout = std::chrono::milliseconds(rollout.weight_sync_timeout_ms);
  options.abort_in_flight = rollout.abort_on_weight_update;
  options.run_id = run_id;
  return options;
}

Status push_checkpoint_weights(transport::WorkDispatcher& dispatcher,
                               const WeightsPushOptions& options, const PolicyUpdate& update) {
  capnp::MallocMessageBuilder message;
  auto weights = wire::init_envelope(message, options.learner_id, options.run_id)
                     .getBody()
                     .initWeightsUpdate();
  weights.setPolicyVersion(update.policy_version);
  weights.setCheckpointDir(update.checkpoint_dir);
  weights.setAbortInFlight(options.abort_in_flight);
  DICE_RETURN_IF_ERROR(dispatcher.broadcast(wire::encode(message)));
  DICE_LOG(Info) << "weights pushed" << kv("policy_version", update.policy_version)
                 << kv("dir", update.checkpoint_dir) << kv("workers", dispatcher.stats().workers);
  return Status::ok_status();
}

WeightsPusher checkpoint_weights_pusher(const WeightsPushOptions& options) {
  return [options](const PolicyUpdate& update, transport::WorkDispatcher& dispatcher) {
    return push_checkpoint_weights(dispatcher, options, update);
  };
}

}  // namespace dice
