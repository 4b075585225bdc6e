// The learner's policy update on the real model (the PolicyUpdater the run loop calls):
//
//   start:  load the initial policy (learner.init_checkpoint, else rollout.model_path) on the
//           learner's GPU in learner.dtype (the CPU when no GPU is visible: fine for the tiny
//           models of tests, hopeless for SDAR sizes, and logged as such); build the PolicyTrainer
//   step:   one TraceRL update on the step's samples; when it ran, write the new weights to
//             <learner.checkpoint.dir>/<run id>/policy-v<version>
//           (config.json + safetensors + the initial policy's tokenizer files, written to a
//           temporary name and renamed, so a reader never sees half a checkpoint) for the push.
//   keep:   the two newest (a rollout worker may still be loading the older one), every version
//           that is a multiple of checkpoint.interval_steps, and of those only the newest
//           checkpoint.keep_last when that is not 0.
#pragma once

#include "common/config/dice_config.h"
#include "learner/policy_update.h"

namespace dice {

// InvalidArgument / NotFound naming the model folder when it cannot be loaded; InvalidArgument
// for rollout.weight_sync nccl without a GPU or NCCL. With `push`, and rollout.weight_sync nccl or
// auto, *push becomes the NCCL pusher of this policy (nccl_weight_pusher.h); else it stays empty.
Result<PolicyUpdater> make_policy_updater(const DiceConfig& config, WeightsPusher* push = nullptr);

}  // namespace dice
