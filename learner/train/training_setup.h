// What the two trainers of the policy (PolicyTrainer: the RL update; SftTrainer: supervised
// fine-tuning) set up alike, so that both are made one way: the options of training on the model
// (optimizer, memory, attention, devices), read from the learner's config in one place, and the
// model readied for training with its replicas and their optimizers
// (learner/parallel/data_parallel.h).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "common/status.h"
#include "learner/parallel/data_parallel.h"
#include "model/qwen3.h"
#include "options/learner_options.h"

namespace dice {

struct TrainingOptions {
  // AdamW on the fp32 masters (learner/parallel/master_weights.h); SftTrainer's lr is set per step
  // by the caller's schedule.
  OptimizerOptions optimizer;
  // Recompute each layer's activations in backward (model/layer_checkpoint.h): far less memory for
  // about one more forward of compute. Default: true
  bool activation_checkpointing = true;
  // Queries per tile of the training attention (Qwen3ModelImpl::attention_tile: each tile reads
  // only the keys its queries may see); 0: one dense attention. Default: 0
  std::int64_t attention_tile = 0;
  // Keep the fp32 master weights and AdamW's two moments in host memory and step them on the
  // CPU (12 bytes per parameter off the GPU: 48 GB for SDAR-4B), copying gradients down and
  // weights back once per update. For one GPU shared with a rollout worker. Default: false
  bool optimizer_on_cpu = false;
  // Replicas on several devices; the default is the model's device alone.
  DataParallelOptions data_parallel;
};

// The learner's settings of the same names (learner.optimizer, activation_checkpointing,
// attention_tile, optimizer_on_cpu; data_parallel for a model on `home`: data_parallel_options).
Result<TrainingOptions> training_options(const LearnerOptions& learner, const c10::Device& home);

// Puts `model` in training mode with `options`' activation checkpointing and attention tile, then
// makes its replicas and their optimizers. DataParallel::create's errors; Internal naming `who`
// when LibTorch fails.
Result<std::unique_ptr<DataParallel>> start_training(Qwen3LM model, const TrainingOptions& options,
                                                     const std::string& who);

}  // namespace dice
