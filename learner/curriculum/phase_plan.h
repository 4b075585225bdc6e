// The phases a run will run: the curriculum's phases that learner.phases selects, each with its
// tasks loaded and its sizes, sampling, timing and schedule resolved from the phase and the
// config (a phase's own setting, else the learner's). The run loop runs them (run/run_loop.h);
// a resume compares them with the phases the run ran before (resume/resume_plan.h).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "learner/curriculum/prompt_template.h"
#include "learner/curriculum/task_loader.h"
#include "learner/curriculum/task_scheduler.h"
#include "options/dice_config.h"

namespace dice {

// One phase as it will run: its tasks (ordered) and its resolved sizes.
struct PhasePlan {
  std::string name;
  PhaseType type = PhaseType::kRl;
  TaskKind kind = TaskKind::kEndToEnd;
  std::vector<LearnerTask> tasks;  // rl and eval
  int steps = 0;                   // rl and eval (eval: at least 1)
  int tasks_per_step = 0;          // capped at tasks.size()
  int samples_per_task = 0;
  Decoding decoding = Decoding::kSample;
  SamplingOptions sampling;        // rl and eval: how its rollouts are decoded (phase_sampling)
  bool timing = true;              // rl and eval: the reward service times correct candidates
  int refill_constant_groups = 0;  // rl: extra tasks a step, one per constant group
  double max_seconds = 0;          // rl: no new step once the phase ran this long (0: none)
  TaskSchedulerOptions schedule;   // rl and eval: how steps pick tasks (task_scheduler.h)
  // rl and eval: the phase's reward_policy, set on every task it sends; null: reward.policy
  std::optional<RewardPolicyOptions> reward_policy;
  std::string sft_data;  // sft
  int epochs = 0;        // sft
};

// The sampling a phase's rollouts use: `sampling` (rollout.sampling) with the phase's own
// temperature, remasking and threshold (`own`, CurriculumPhase::sampling) where it sets them, or
// for greedy decoding DICE's evaluation settings on top of `sampling`: temperature 0 and
// low_confidence_static (a greedy phase has no own sampling: the config refuses it).
SamplingOptions phase_sampling(const SamplingOptions& sampling, Decoding decoding,
                               const PhaseSampling& own = {});

// Whether a phase's verdicts need timing (CurriculumPhase::timing; null: eval phases, and rl
// phases whose reward, the phase's reward_policy or else reward.policy, reads a speedup).
// InvalidArgument for an rl phase without timing under a reward that reads one, or a phase
// reward_policy that reads one while reward.timing.enabled is false.
Result<bool> phase_timing(const CurriculumPhase& phase, const RewardOptions& reward);

// The phases learner.phases selects (all when empty), in curriculum order, with their tasks
// loaded. InvalidArgument for a learner.phases name the curriculum does not have, or a bad task
// file.
Result<std::vector<PhasePlan>> plan_phases(const DiceConfig& config,
                                           const std::map<TaskKind, PromptTemplate>& prompts);

}  // namespace dice
