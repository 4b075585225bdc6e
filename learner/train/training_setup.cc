#include "learner/train/training_setup.h"

#include <c10/util/Exception.h>

namespace dice {

Result<TrainingOptions> training_options(const LearnerOptions& learner, const c10::Device& home) {
  TrainingOptions options;
  DICE_ASSIGN_OR_RETURN(options.data_parallel, data_parallel_options(learner.data_parallel, home));
  options.optimizer = learner.optimizer;
  options.activation_checkpointing = learner.activation_checkpointing;
  options.attention_tile = learner.attention_tile;
  options.optimizer_on_cpu = learner.optimizer_on_cpu;
  return options;
}

Result<std::unique_ptr<DataParallel>> start_training(Qwen3LM model, const TrainingOptions& options,
                                                     const std::string& who) {
  try {
    model->train();
    model->model->activation_checkpointing = options.activation_checkpointing;
    model->model->attention_tile = options.attention_tile;
    return DataParallel::create(model, options.optimizer, options.optimizer_on_cpu,
                                options.data_parallel);
  } catch (const c10::Error& e) {
    return Status::internal(who + ": " + e.what_without_backtrace());
  }
}

}  // namespace dice
