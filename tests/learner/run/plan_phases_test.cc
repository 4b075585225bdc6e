// plan_phases (run_loop.h) applies a phase's own settings: its prompt template renders its tasks'
// prompts (a bad one is named), its reward policy and scheduling reach the plan, and a phase
// without them gets the curriculum's scheduling and reward.policy (null reward_policy); its own
// sampling keys override rollout.sampling's.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "common/remove_tree.h"
#include "learner/run/run_loop.h"

namespace dice {
namespace {

namespace fs = std::filesystem;

class PlanPhasesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("dice_plan_phases_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
    std::ofstream(dir_ / "tasks.json") << R"([
      {"idx": 1, "level": "1", "pytorch_code": "import torch\n# one"},
      {"idx": 2, "level": "2", "pytorch_code": "import torch\n# two"}
    ])";
    std::ofstream(dir_ / "mine.txt")
        << "# a phase's own template\n---\nMINE {task_id}: {reference}\n";
    config_.curriculum.scheduling = TaskScheduling::kMixed;
  }
  void TearDown() override { EXPECT_TRUE(remove_tree(dir_).ok()); }

  CurriculumPhase phase(const std::string& name) const {
    CurriculumPhase p;
    p.name = name;
    p.task_files = {(dir_ / "tasks.json").string()};
    p.steps = 1;
    return p;
  }
  Result<std::vector<PhasePlan>> plan() {
    auto prompts = load_prompt_templates({});
    EXPECT_TRUE(prompts.ok()) << prompts.status().to_string();
    return plan_phases(config_, *prompts);
  }

  fs::path dir_;
  DiceConfig config_;
};

TEST_F(PlanPhasesTest, APhasesOwnSettingsReachItsPlan) {
  CurriculumPhase own = phase("own");
  own.prompt_template = (dir_ / "mine.txt").string();
  own.reward_policy = RewardPolicyOptions{RewardPolicy::kSpeedupThreshold, 1.5};
  own.scheduling = TaskScheduling::kSequentialSelect;
  own.pass_rate_band = PassRateBand{0.1, 0.9, 2};
  own.timing = true;
  config_.reward.timing.enabled = true;
  config_.curriculum.phases = {own, phase("plain")};
  auto plans = plan();
  ASSERT_TRUE(plans.ok()) << plans.status().to_string();
  const PhasePlan& a = (*plans)[0];
  EXPECT_EQ(a.tasks[0].prompt, "MINE 1: import torch\n# one");
  ASSERT_TRUE(a.reward_policy.has_value());
  EXPECT_DOUBLE_EQ(a.reward_policy->min_speedup, 1.5);
  EXPECT_EQ(a.schedule.scheduling, TaskScheduling::kSequentialSelect);
  ASSERT_TRUE(a.schedule.band.has_value());
  EXPECT_EQ(a.schedule.band->window, 2);

  const PhasePlan& b = (*plans)[1];
  EXPECT_EQ(b.tasks[0].prompt.find("MINE"), std::string::npos);  // the built-in template
  EXPECT_FALSE(b.reward_policy.has_value());
  EXPECT_EQ(b.schedule.scheduling, TaskScheduling::kMixed);  // the curriculum's
  EXPECT_FALSE(b.schedule.band.has_value());
}

TEST_F(PlanPhasesTest, APhasesSamplingOverridesRolloutSampling) {
  config_.rollout.sampling.temperature = 1.0;
  config_.rollout.sampling.remasking = Remasking::LOW_CONFIDENCE_DYNAMIC;
  config_.rollout.sampling.threshold = 0.9;
  CurriculumPhase own = phase("own");
  own.sampling.temperature = 1.3;
  own.sampling.remasking = Remasking::RANDOM;
  CurriculumPhase eval = phase("eval");
  eval.type = PhaseType::kEval;
  CurriculumPhase sampled_eval = eval;
  sampled_eval.name = "sampled-eval";
  sampled_eval.decoding = Decoding::kSample;
  sampled_eval.sampling.threshold = 0.5;
  config_.curriculum.phases = {own, phase("plain"), eval, sampled_eval};
  auto plans = plan();
  ASSERT_TRUE(plans.ok()) << plans.status().to_string();
  const SamplingOptions& a = (*plans)[0].sampling;
  EXPECT_DOUBLE_EQ(a.temperature, 1.3);
  EXPECT_EQ(a.remasking, Remasking::RANDOM);
  EXPECT_DOUBLE_EQ(a.threshold, 0.9);  // not set by the phase: rollout.sampling's
  const SamplingOptions& b = (*plans)[1].sampling;
  EXPECT_DOUBLE_EQ(b.temperature, 1.0);
  EXPECT_EQ(b.remasking, Remasking::LOW_CONFIDENCE_DYNAMIC);
  const SamplingOptions& c = (*plans)[2].sampling;  // greedy: DICE's evaluation decoding
  EXPECT_DOUBLE_EQ(c.temperature, 0.0);
  EXPECT_EQ(c.remasking, Remasking::LOW_CONFIDENCE_STATIC);
  const SamplingOptions& d = (*plans)[3].sampling;
  EXPECT_DOUBLE_EQ(d.temperature, 1.0);
  EXPECT_DOUBLE_EQ(d.threshold, 0.5);
}

TEST_F(PlanPhasesTest, ABadPhaseTemplateIsNamed) {
  CurriculumPhase p = phase("p");
  p.prompt_template = (dir_ / "missing.txt").string();
  config_.curriculum.phases = {p};
  auto plans = plan();
  ASSERT_FALSE(plans.ok());
  EXPECT_NE(plans.status().message().find("missing.txt"), std::string::npos)
      << plans.status().message();

  std::ofstream(dir_ / "typo.txt") << "---\n{refrence}\n";
  p.prompt_template = (dir_ / "typo.txt").string();
  config_.curriculum.phases = {p};
  plans = plan();
  ASSERT_FALSE(plans.ok());
  EXPECT_NE(plans.status().message().find("unknown placeholder {refrence}"), std::string::npos)
      << plans.status().message();
}

}  // namespace
}  // namespace dice
