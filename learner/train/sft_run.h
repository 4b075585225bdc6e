// learner.mode sft: supervised fine-tuning of the initial policy on learner.sft.data_file
// (learner/curriculum/sft_data.h) before RL, as DICE's first stage.
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

#include "common/status.h"
#include "model/qwen3.h"
#include "net/service/metrics_registry.h"
#include "options/dice_config.h"
#include "rewardlog/writer.h"

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

// One SFT job on a model already loaded (learner.mode sft, and the curriculum's sft phases).
struct SftJob {
  std::string data_file;  // learner/curriculum/sft_data.h
  int epochs = 1;
  std::string tokenizer_dir;  // the folder whose tokenizer.json tokenizes text items
  // A curriculum phase's prompt_template: replaces rollout.prompt_templates' template of
  // `prompt_kind` for this job's pairs. Empty: none.
  std::string prompt_template;
  TaskKind prompt_kind = TaskKind::kEndToEnd;
  // Called every learner.checkpoint.interval_steps steps (not after the last): writes a
  // checkpoint. Empty: none in between.
  std::function<Status(std::int64_t steps)> save_every;
  // The SFT gauges (dice_learner_sft_step, _loss); null: none.
  service::MetricsRegistry* registry = nullptr;
};

// Trains `model` in place on the job's data (sft_trainer.h), steps of learner.sft.batch_size at
// learner.sft.lr after its warm-up, a progress line per step, sft/loss, sft/lr and sft/grad_norm
// in the reward log. Returns after the last step or the first one after a stop request; the
// caller writes the final checkpoint (summary.checkpoint stays empty). Errors as run_sft's.
Result<SftRunSummary> train_sft(Qwen3LM model, const DiceConfig& config, const SftJob& job,
                                rewardlog::RewardLogWriter& log,
                                const std::function<bool()>& stop_requested);

}  // namespace dice
