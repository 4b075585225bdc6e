// learner/train/training_setup.h: both trainers take their training settings from the learner's
// config through one function, and ready the model the same way (the tiny random model, CPU).
#include "learner/train/training_setup.h"

#include <gtest/gtest.h>

#include <vector>

#include "common/config/config_errors.h"
#include "learner/train/policy_trainer.h"
#include "learner/train/sft_trainer.h"
#include "tests/learner/train/policy_trainer_test_util.h"
#include "tests/model/model_test_util.h"

namespace dice {
namespace {

using testing_util::random_lm;
using testing_util::tiny_config;

TEST(TrainingSetupTest, OptionsComeFromTheLearnersSettings) {
  LearnerOptions learner;
  learner.optimizer.lr = 3e-5;
  learner.optimizer.grad_accumulation = 5;
  learner.activation_checkpointing = false;
  learner.attention_tile = 64;
  learner.optimizer_on_cpu = true;
  auto options = training_options(learner, c10::Device(at::kCPU));
  ASSERT_TRUE(options.ok()) << options.status().to_string();
  EXPECT_DOUBLE_EQ(options->optimizer.lr, 3e-5);
  EXPECT_EQ(options->optimizer.grad_accumulation, 5);
  EXPECT_FALSE(options->activation_checkpointing);
  EXPECT_EQ(options->attention_tile, 64);
  EXPECT_TRUE(options->optimizer_on_cpu);
  EXPECT_EQ(options->data_parallel.devices, std::vector<c10::Device>{c10::Device(at::kCPU)});
}

TEST(TrainingSetupTest, TheModelIsReadiedAndReplicatedAsTheOptionsSay) {
  Qwen3LM model = random_lm(tiny_config(), 3);
  model->eval();
  TrainingOptions options;
  options.activation_checkpointing = true;
  options.attention_tile = 8;
  auto replicas = start_training(model, options, "test");
  ASSERT_TRUE(replicas.ok()) << replicas.status().to_string();
  EXPECT_TRUE(model->is_training());
  EXPECT_TRUE(model->model->activation_checkpointing);
  EXPECT_EQ(model->model->attention_tile, 8);
  EXPECT_EQ((*replicas)->size(), 1);

  options.data_parallel.devices = {c10::Device(at::kCUDA, 0)};  // not the model's device
  auto wrong = start_training(model, options, "test");
  EXPECT_EQ(wrong.status().code(), StatusCode::kInvalidArgument) << wrong.status().to_string();
}

// shard: parameters frees each layer's weights after its forward: only activation checkpointing
// brings them back for the backward. The config refuses the pair, naming both keys, and so does
// start_training for options made in code.
TEST(TrainingSetupTest, ShardedParametersNeedActivationCheckpointing) {
  LearnerOptions learner;
  learner.data_parallel.shard = ShardMode::kParameters;
  learner.activation_checkpointing = false;
  std::vector<config::ConfigError> errors;
  config::Checker checker("learner", &errors);
  learner.validate(checker);
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].path, "learner.data_parallel.shard");
  EXPECT_NE(errors[0].message.find("learner.activation_checkpointing: true"), std::string::npos)
      << errors[0].message;
  learner.activation_checkpointing = true;
  errors.clear();
  learner.validate(checker);
  EXPECT_TRUE(errors.empty());

  auto options = training_options(learner, c10::Device(at::kCPU));
  ASSERT_TRUE(options.ok()) << options.status().to_string();
  EXPECT_EQ(options->data_parallel.shard, ShardMode::kParameters);
  options->activation_checkpointing = false;
  auto refused = start_training(random_lm(tiny_config(), 3), *options, "test");
  EXPECT_EQ(refused.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(refused.status().message().find("learner.data_parallel.shard"), std::string::npos)
      << refused.status().to_string();
  options->activation_checkpointing = true;
  EXPECT_TRUE(start_training(random_lm(tiny_config(), 3), *options, "test").ok());
}

// Each trainer is made through start_training: its options reach the model alike.
TEST(TrainingSetupTest, BothTrainersApplyTheirTrainingOptions) {
  PolicyTrainerOptions policy = testing_util::tiny_trainer_options();
  policy.attention_tile = 4;
  policy.activation_checkpointing = false;
  Qwen3LM policy_model = random_lm(tiny_config(), 4);
  ASSERT_TRUE(PolicyTrainer::create(policy_model, policy).ok());
  EXPECT_EQ(policy_model->model->attention_tile, 4);
  EXPECT_FALSE(policy_model->model->activation_checkpointing);

  SftTrainerOptions sft;
  sft.attention_tile = 12;
  sft.activation_checkpointing = true;
  Qwen3LM sft_model = random_lm(tiny_config(), 5);
  sft_model->eval();
  ASSERT_TRUE(SftTrainer::create(sft_model, sft).ok());
  EXPECT_EQ(sft_model->model->attention_tile, 12);
  EXPECT_TRUE(sft_model->model->activation_checkpointing);
  EXPECT_TRUE(sft_model->is_training());
}

}  // namespace
}  // namespace dice
