// A rollout worker's side of the NCCL weight broadcast (the learner's:
// learner/push/nccl_weight_pusher.h).
//
//   WeightsUpdate{version, nccl{uniqueId, worldSize, workerIds | rank, tensors, fallbackDir}}
//     -> my rank: my worker id's place in workerIds (+1), or `rank` when the list is empty;
//        not listed: the learner left me out -> kNotListed (the caller loads fallbackDir)
//     -> validate the tensor list against my model (names, dtypes, shapes, order)
//        mismatch: InvalidArgument, nothing joined, weights untouched
//     -> join the communicator (made on the first update, reused while uniqueId stays the same)
//     -> receive into fresh staging tensors while the sampler keeps running on the old weights
//     -> engine.update_weights_with(copy staging -> model): swapped in between sampler steps,
//        after the running sequences finish or at once when aborting, like a checkpoint update;
//        the engine then reports the new policy version with every group.
// Any NCCL failure or timeout drops the communicator (the learner makes a new unique id) and is
// returned, so the caller can report it and fall back to the checkpoint folder.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "common/status.h"
#include "model/nccl/nccl_communicator.h"
#include "model/qwen3.h"
#include "rollout/rollout_engine.h"
#include "schemas/control.capnp.h"

namespace dice {

class NcclWeightReceiver {
 public:
  enum class Outcome {
    kReceived,   // the weights arrived and wait in the engine for their swap
    kNotListed,  // this worker has no rank in the broadcast: use fallbackDir
  };

  // `model` is the engine's model (same module: the receiver reads its parameter list, the
  // engine thread writes the parameters); `worker_id` is looked up in workerIds.
  NcclWeightReceiver(Qwen3LM model, std::string worker_id);

  // Handles one NCCL WeightsUpdate (see the header comment). Errors: InvalidArgument (a tensor
  // list that does not fit this model, a bad rank), Unavailable (no NCCL in this build, weights
  // not on a GPU), Timeout / Internal / Aborted (from the communicator). On every error the
  // worker's weights and version are unchanged.
  Result<Outcome> receive(schema::WeightsUpdate::Reader update, RolloutEngine& engine,
                          bool abort_in_flight);

  // Whether a communicator is held (for tests and logs).
  bool connected() const { return comm_ != nullptr; }

 private:
  Qwen3LM model_;
  std::string worker_id_;
  std::unique_ptr<nccl::Communicator> comm_;  // keyed by its unique id
};

}  // namespace dice
