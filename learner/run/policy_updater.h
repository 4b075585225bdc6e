// The learner's policy update on the real model (the PolicyStages the run loop calls):
//
//   start:  load the initial policy (learner.init_checkpoint, else rollout.model_path) on the
//           learner's GPU in learner.dtype (the CPU when no GPU is visible: fine for the tiny
//           models of tests, hopeless for SDAR sizes, and logged as such); build the PolicyTrainer
//   step:   one TraceRL update on the step's samples; when it ran, write the new weights to
//             <learner.checkpoint.dir>/<run id>/policy-v<version>
//           (config.json + safetensors + the initial policy's tokenizer files, written to a
//           temporary name and renamed, so a reader never sees half a checkpoint) for the push.
//   sft:    a curriculum sft phase trains the same model (train_sft) and is saved as the next
//           version, like an update
//   phase:  after every phase, <learner.checkpoint.dir>/<run id>/phase-<name> holds its weights;
//           as an rl phase begins, with loss.kl_reference phase_start, a frozen copy of the
//           weights becomes the KL reference (after a resume inside the phase: read from the
//           previous phase's checkpoint, or the initial policy)
//   keep:   the two newest versions (a rollout worker may still be loading the older one), every
//           version that is a multiple of checkpoint.interval_steps, and of those only the newest
//           checkpoint.keep_last when that is not 0; phase checkpoints are never deleted.
#pragma once

#include "learner/step/policy_update.h"
#include "options/dice_config.h"

namespace dice {

// What the run loop does to the weights, on one model the learner holds: the TraceRL update, the
// curriculum's sft phases (learner/train/sft_run.h: train_sft, on the same model; the RL trainer is
// made again after one), and each phase's closing checkpoint, <checkpoint.dir>/<run
// id>/phase-<name>.
struct PolicyStages {
  PolicyUpdater update;
  SftStage sft;
  PhaseCheckpointer finish_phase;
  PhaseStarter start_phase;  // the KL reference of loss.kl_reference phase_start
  StateSaver save_state;     // for a resume: model/ and optimizer.pt
  StateLoader load_state;
};

// InvalidArgument / NotFound naming the model folder when it cannot be loaded; InvalidArgument
// for rollout.weight_sync nccl without a GPU or NCCL. With `push`, *push becomes the run's way of
// pushing this policy's versions (make_weights_pusher, learner/push/nccl_weight_pusher.h: the
// checkpoint folder, or NCCL with it as fallback). `config` must outlive the stages.
Result<PolicyStages> make_policy_stages(const DiceConfig& config, WeightsPusher* push = nullptr);

}  // namespace dice
