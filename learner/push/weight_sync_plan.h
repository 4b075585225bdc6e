// How the learner pushes each new policy version to rollout workers (rollout.weight_sync), as
// plain decisions without LibTorch or NCCL so they can be tested alone; nccl_weight_pusher.h acts
// on them. Also the push by checkpoint folder, which needs neither (push_checkpoint_weights).
//
//   checkpoint: always the checkpoint folder.
//   nccl:       NCCL broadcast; the learner refuses to start without a GPU and NCCL.
//   auto:       NCCL when the learner has both, else the checkpoint folder.
// In both NCCL modes: no rollout worker registered, or an earlier broadcast that failed in this
// run (the learner's socket cannot tell which worker failed, so it stops trying), means the
// checkpoint folder. Ranks: rank 0 is the learner; the registered rollout workers follow in
// worker-id order, so the same set of workers always gets the same ranks.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "common/status.h"
#include "learner/step/policy_update.h"
#include "net/transport/work_dispatcher.h"
#include "options/rollout_options.h"

namespace dice {

// Whether `worker_id` names a rollout worker ("<node>/rollout/<index>", net/service/worker_loop.h).
bool is_rollout_worker_id(const std::string& worker_id);

// The rollout workers among `worker_ids`, sorted: the worker at index i gets rank i + 1.
std::vector<std::string> assign_ranks(std::vector<std::string> worker_ids);

struct WeightSyncInputs {
  WeightSync mode = WeightSync::kCheckpoint;
  bool learner_gpu = false;             // the learner's policy is on a CUDA device
  bool nccl_built = false;              // nccl::built_with_nccl()
  std::vector<std::string> worker_ids;  // registered workers, any role
  std::string disabled_reason;          // non-empty: an earlier broadcast failed this run, and why
};

struct WeightSyncPlan {
  bool nccl = false;
  std::string reason;              // why the checkpoint folder (empty when nccl)
  std::vector<std::string> ranks;  // when nccl: worker ids by rank - 1
};

WeightSyncPlan plan_weight_sync(const WeightSyncInputs& inputs);

// For rollout.weight_sync nccl at start-up: InvalidArgument naming the setting and what is
// missing (a GPU for the policy, NCCL in this build); OK for every other mode.
Status check_weight_sync_setting(WeightSync mode, bool learner_gpu, bool nccl_built);

// How a run pushes its weights: rollout's settings and the learner's envelope identity.
struct WeightsPushOptions {
  // rollout.weight_sync. Default: checkpoint
  WeightSync mode = WeightSync::kCheckpoint;
  // rollout.weight_sync_timeout_ms: communicator join and each broadcast. Default: 60000
  std::chrono::milliseconds timeout{60000};
  // WeightsUpdate.abortInFlight (rollout.abort_on_weight_update). Default: false
  bool abort_in_flight = false;
  // senderId and runId of the learner's envelopes. Default: "learner", "-"
  std::string learner_id = "learner";
  std::string run_id = "-";
};

// The options of `rollout` for run `run_id`.
WeightsPushOptions weights_push_options(const RolloutOptions& rollout, const std::string& run_id);

// Tells every worker (rollout workers act on it, reward workers ignore it) that
// update.checkpoint_dir holds policy update.policy_version: one WeightsUpdate{checkpointDir}.
Status push_checkpoint_weights(transport::WorkDispatcher& dispatcher,
                               const WeightsPushOptions& options, const PolicyUpdate& update);

// A pusher that sends every version as its checkpoint folder (rollout.weight_sync checkpoint;
// make_weights_pusher in nccl_weight_pusher.h chooses between the two ways).
WeightsPusher checkpoint_weights_pusher(const WeightsPushOptions& options);

}  // namespace dice
