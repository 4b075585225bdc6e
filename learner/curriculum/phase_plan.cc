#include "learner/curriculum/phase_plan.h"

#include <algorithm>

#include "common/fixed_text.h"
#include "common/log.h"

namespace dice {

SamplingOptions phase_sampling(const SamplingOptions& sampling, Decoding decoding,
                               const PhaseSampling& own) {
  SamplingOptions s = sampling;
  if (decoding == Decoding::kGreedy) {
    s.temperature = 0.0;
    s.top_k = 0;
    s.top_p = 1.0;
    s.remasking = Remasking::LOW_CONFIDENCE_STATIC;
    return s;
  }
  s.temperature = own.temperature.value_or(s.temperature);
  s.remasking = own.remasking.value_or(s.remasking);
  s.threshold = own.threshold.value_or(s.threshold);
  return s;
}

namespace {

// One phase of the curriculum as it will run (tasks loaded for rl and eval phases).
Result<PhasePlan> plan_phase(const CurriculumPhase& phase, const DiceConfig& config,
                             const std::map<TaskKind, PromptTemplate>& prompts) {
  PhasePlan plan;
  plan.name = phase.name;
  plan.type = phase.type;
  plan.kind = phase.kind;
  if (phase.type == PhaseType::kSft) {
    plan.sft_data = phase.sft_data;
    plan.epochs = phase.epochs.value_or(config.learner.sft.epochs);
    DICE_LOG(Info) << "phase planned" << kv("phase", plan.name) << kv("type", "sft")
                   << kv("data", plan.sft_data) << kv("epochs", plan.epochs);
    return plan;
  }
  const bool eval = phase.type == PhaseType::kEval;
  plan.decoding = phase.decoding.value_or(eval ? Decoding::kGreedy : Decoding::kSample);
  plan.sampling = phase_sampling(config.rollout.sampling, plan.decoding, phase.sampling);
  plan.steps = eval ? std::max(1, phase.steps) : phase.steps;
  plan.samples_per_task = phase.samples_per_task.value_or(eval ? 1 : config.learner.group_size);
  plan.refill_constant_groups = phase.refill_constant_groups;
  plan.max_seconds = phase.max_minutes * 60;
  plan.schedule.scheduling = phase.scheduling.value_or(config.curriculum.scheduling);
  plan.schedule.promotion = phase.promotion;
  plan.schedule.band = phase.pass_rate_band;
  plan.reward_policy = phase.reward_policy;
  DICE_ASSIGN_OR_RETURN(plan.timing, phase_timing(phase, config.reward));
  std::map<TaskKind, PromptTemplate> phase_prompts = prompts;
  if (!phase.prompt_template.empty()) {
    DICE_ASSIGN_OR_RETURN(PromptTemplate own,
                          PromptTemplate::load_file(phase.prompt_template, phase.kind));
    phase_prompts.insert_or_assign(phase.kind, std::move(own));
  }
  DICE_ASSIGN_OR_RETURN(plan.tasks, load_phase_tasks(phase, phase_prompts));
  const int wanted_tasks = phase.tasks_per_step.value_or(eval ? static_cast<int>(plan.tasks.size())
                                                              : config.learner.tasks_per_step);
  plan.tasks_per_step = std::min<int>(wanted_tasks, static_cast<int>(plan.tasks.size()));
  if (plan.tasks_per_step < wanted_tasks) {
    DICE_LOG(Warn) << "phase has fewer tasks than tasks_per_step; each step takes every task once"
                   << kv("phase", phase.name) << kv("tasks", plan.tasks.size())
                   << kv("tasks_per_step", wanted_tasks);
  }
  DICE_LOG(Info) << "phase planned" << kv("phase", plan.name) << kv("type", eval ? "eval" : "rl")
                 << kv("tasks", plan.tasks.size()) << kv("steps", plan.steps)
                 << kv("tasks_per_step", plan.tasks_per_step)
                 << kv("samples_per_task", plan.samples_per_task)
                 << kv("decoding", plan.decoding == Decoding::kGreedy ? "greedy" : "sample")
                 << kv("temperature", plan.sampling.temperature)
                 << kv("remasking", config::enum_to_name(plan.sampling.remasking))
                 << kv("timing", plan.timing)
                 << kv("refill_constant_groups", plan.refill_constant_groups)
                 << kv("scheduling", config::enum_to_name(plan.schedule.scheduling))
                 << kv("pass_rate_band", plan.schedule.band
                                             ? "[" + fixed_text(plan.schedule.band->lo, 2) + ", " +
                                                   fixed_text(plan.schedule.band->hi, 2) + "]"
                                             : std::string("off"))
                 << kv("reward_policy", plan.reward_policy
                                            ? config::enum_to_name(plan.reward_policy->kind)
                                            : std::string("reward.policy"))
                 << kv("prompt_template", phase_prompts.at(phase.kind).origin());
  return plan;
}

}  // namespace

Result<bool> phase_timing(const CurriculumPhase& phase, const RewardOptions& reward) {
  const RewardPolicyOptions& policy = phase.reward_policy ? *phase.reward_policy : reward.policy;
  const bool reads_speedup = policy.kind == RewardPolicy::kSpeedupThreshold;
  const std::string whose = phase.reward_policy ? "its reward_policy" : "reward.policy";
  if (phase.type == PhaseType::kRl && phase.timing == false && reads_speedup) {
    return Status::invalid_argument("phase " + phase.name + ": timing false, but " + whose +
                                    " (speedup_threshold) rewards a speedup, which needs timing");
  }
  if (phase.reward_policy && reads_speedup && !reward.timing.enabled) {  // reward.policy's own
    // case is RewardOptions::validate's
    return Status::invalid_argument("phase " + phase.name + ": " + whose +
                                    " (speedup_threshold) rewards a speedup, but "
                                    "reward.timing.enabled is false");
  }
  // An rl step's timings would take the GPU to itself for numbers nothing reads.
  return phase.timing.value_or(phase.type == PhaseType::kEval || reads_speedup);
}

Result<std::vector<PhasePlan>> plan_phases(const DiceConfig& config,
                                           const std::map<TaskKind, PromptTemplate>& prompts) {
  const auto& wanted = config.learner.phases;
  for (const std::string& name : wanted) {
    bool known = false;
    for (const auto& phase : config.curriculum.phases) known |= phase.name == name;
    if (!known) {
      return Status::invalid_argument("learner.phases: no curriculum phase named '" + name + "'");
    }
  }
  std::vector<PhasePlan> plans;
  for (const CurriculumPhase& phase : config.curriculum.phases) {
    if (!wanted.empty() && std::find(wanted.begin(), wanted.end(), phase.name) == wanted.end()) {
      continue;
    }
    DICE_ASSIGN_OR_RETURN(PhasePlan plan, plan_phase(phase, config, prompts));
    plans.push_back(std::move(plan));
  }
  return plans;
}

}  // namespace dice
