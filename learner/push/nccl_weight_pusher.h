// The learner's weight push when rollout.weight_sync is nccl or auto (the worker's side:
// rollout/nccl_weight_receiver.h). Per new policy version, with the plan of weight_sync_plan.h:
//
//   1. ranks = the registered rollout workers (sorted ids); a new NCCL unique id when there is
//      no communicator yet or the workers changed (the communicator is reused while they do not)
//   2. broadcast on the work socket: WeightsUpdate{version, nccl{uniqueId, worldSize, rank 0,
//      workerIds, tensors (names, dtypes, shapes in hf_named_parameters order), fallbackDir =
//      the version's checkpoint folder, timeoutMs}}
//   3. join the communicator as rank 0 (first time only), then broadcast the parameters in bf16
//      (the rollout workers' dtype), each step within rollout.weight_sync_timeout_ms
//   4. any failure (a worker that did not join, died mid-broadcast, NCCL error): abort the
//      communicator, log it, and push the checkpoint folder instead (workers that already hold
//      the version ignore it); NCCL stays off for the rest of the run, since the learner's
//      socket cannot tell which worker failed (that worker's Error, if it sent one, is in the
//      learner's log).
// Not thread-safe: the run loop calls push() from its one thread.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "common/status.h"
#include "learner/push/weight_sync_plan.h"
#include "learner/step/policy_update.h"
#include "model/nccl/nccl_communicator.h"
#include "model/qwen3.h"
#include "net/transport/work_dispatcher.h"
#include "options/rollout_options.h"

namespace dice {

class NcclWeightPusher {
 public:
  // `model` is the learner's policy (shared with the trainer: its parameters are read at push
  // time).
  NcclWeightPusher(Qwen3LM model, WeightsPushOptions options);
  ~NcclWeightPusher();

  // Pushes `update` by NCCL when the plan allows, else (and after any NCCL failure) as its
  // checkpoint folder. Errors only when the checkpoint push itself fails (the socket closed).
  Status push(const PolicyUpdate& update, transport::WorkDispatcher& dispatcher);

  // Step 2-3 alone, without the fallback: for the push above and for tests. Errors: those of
  // nccl::Communicator (Timeout when a rank does not join or finish), InvalidArgument for
  // parameters NCCL cannot send, and the socket's.
  Status push_nccl(const PolicyUpdate& update, transport::WorkDispatcher& dispatcher,
                   const std::vector<std::string>& ranks);

  // Why NCCL is off for the rest of the run; empty while it is not.
  const std::string& disabled_reason() const { return disabled_; }

 private:
  Qwen3LM model_;
  WeightsPushOptions options_;
  std::unique_ptr<nccl::Communicator> comm_;
  std::string unique_id_;           // of comm_, or of the one being set up
  std::vector<std::string> ranks_;  // the workers unique_id_ was made for
  std::string disabled_;
  std::string last_reason_;  // the last reason for a checkpoint push, logged when it changes
};

// This run's way of pushing each new version (the one place that decides it): as checkpoint
// folders when options.mode is checkpoint, else an NcclWeightPusher of `model` (the learner's
// policy), which falls back to the checkpoint folder by itself.
WeightsPusher make_weights_pusher(const WeightsPushOptions& options, const Qwen3LM& model);

}  // namespace dice
