// Shared by the PolicyTrainer tests: the trainer's options for the tiny model of
// tests/model/model_test_util.h (blocks of 4, 4 denoising steps, two micro-batches a step).
#pragma once

#include "learner/train/policy_trainer.h"
#include "tests/model/model_test_util.h"

namespace dice {
namespace testing_util {

inline PolicyTrainerOptions tiny_trainer_options() {
  PolicyTrainerOptions o;
  o.layout.block_size = 4;
  o.layout.denoising_steps = 4;
  o.layout.mask_token_id = tiny_config().mask_token_id;
  o.optimizer.grad_accumulation = 2;
  return o;
}

}  // namespace testing_util
}  // namespace dice
