// learner.mode sft: supervised fine-tuning of the initial policy on learner.sft.data_file
// (sft_data.h) before RL, as DICE's first stage.
//
//   load the policy (learner.init_checkpoint, else rollout.model_path) and its tokenizer.json
//   (needed only for text items), the data; then for each epoch, in a seeded shuffled order, steps
//   of sft.batch_size samples (sft_trainer.h) at lr = sft.lr, warmed up linearly over the first
//   sft.warmup_ratio of all steps; a progress line per step (loss, lr, tokens/s, ETA), metric
//   series sft/loss, sft/lr, sft/grad_norm in the reward log; a checkpoint
//   <checkpoint.dir>/<run id>/sft-step-N every checkpoint.interval_steps steps and at the end
//   (start RL from it with learner.init_checkpoint).
// A stop request ends the run after the step in hand, with a checkpoint.
#pragma once

#include <functional>
#include <string>

#include "common/config/dice_config.h"
#include "common/rewardlog/writer.h"
#include "common/service/metrics_registry.h"
#include "common/status.h"

namespace dice {

struct SftRunSummary {
  std::int64_t steps = 0;
  bool stopped = false;
  std::string checkpoint;  // the last one written
};

// InvalidArgument / NotFound for bad input (model, data, templates); Internal for LibTorch.
Result<SftRunSummary> run_sft(const DiceConfig& config, rewardlog::RewardLogWriter& log,
                              service::MetricsRegistry& registry,
                              const std::function<bool()>& stop_requested);

}  // namespace dice
