// The curriculum: phases run in order, each starting from the weights the previous one ended
// with. DICE's is kernel infilling, then end-to-end (configs/curriculum/dice.yaml); the small
// recipe (configs/curriculum/tiny.yaml) puts supervised fine-tuning first and an evaluation of
// held-out tasks after each stage. A phase is one of
//   rl    (the default) TraceRL steps on its tasks;
//   sft   supervised fine-tuning on sft_data for `epochs` (learner.sft gives the rest);
//   eval  its tasks judged once with the weights as they are (no update), decoded greedily by
//         default, reported as the field's table (Exec, fast_1, fast_2 per level).
// An rl or eval phase's task files are concatenated and sorted stably by level_order (easy to
// hard; tasks keep file order within a level). By default ("sequential select", DICE's release)
// each step takes the next tasks_per_step tasks, wrapping to the start when the list runs out
// (and, with refill_constant_groups, one more for each group whose rewards were all equal);
// `scheduling: mixed` opens the levels one by one as the policy passes them, and a pass-rate
// band revisits the tasks the policy solves sometimes and skips those too easy or too hard
// (learner/curriculum/task_scheduler.h). Each
// phase ends with a checkpoint of its weights, <checkpoint.dir>/<run id>/phase-<name>, which
// retention never deletes.
//
// Lives in its own YAML file, named by `curriculum_file` in the main config. Task file paths are
// relative to the curriculum file's directory (or absolute); see common/config/load.h.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/config/config_errors.h"
#include "common/config/field_checks.h"
#include "options/reward_options.h"
#include "options/rollout_options.h"

namespace dice {

// Which prompt and reward skeleton a task gets.
enum class TaskKind { kInfill, kEndToEnd };
inline constexpr config::EnumName<TaskKind> kTaskKindNames[] = {
    {TaskKind::kInfill, "infill"}, {TaskKind::kEndToEnd, "end_to_end"}};
constexpr const auto& enum_names(TaskKind) {
  return kTaskKindNames;
}

// What a phase does (see the header comment).
enum class PhaseType { kRl, kSft, kEval };
inline constexpr config::EnumName<PhaseType> kPhaseTypeNames[] = {
    {PhaseType::kRl, "rl"}, {PhaseType::kSft, "sft"}, {PhaseType::kEval, "eval"}};
constexpr const auto& enum_names(PhaseType) {
  return kPhaseTypeNames;
}

// How rollouts of a phase are decoded: `sample` by rollout.sampling (DICE's RL settings) with the
// phase's own `sampling` keys over it (PhaseSampling), or
// `greedy`: DICE's evaluation decoding (temperature 0, low_confidence_static, the same block and
// steps and max_new_tokens).
enum class Decoding { kSample, kGreedy };
inline constexpr config::EnumName<Decoding> kDecodingNames[] = {{Decoding::kSample, "sample"},
                                                                {Decoding::kGreedy, "greedy"}};
constexpr const auto& enum_names(Decoding) {
  return kDecodingNames;
}

// How an rl or eval phase picks each step's tasks (learner/curriculum/task_scheduler.h).
enum class TaskScheduling { kSequentialSelect, kMixed };
inline constexpr config::EnumName<TaskScheduling> kTaskSchedulingNames[] = {
    {TaskScheduling::kSequentialSelect, "sequential_select"}, {TaskScheduling::kMixed, "mixed"}};
constexpr const auto& enum_names(TaskScheduling) {
  return kTaskSchedulingNames;
}

// When the mixed scheduler opens the next level: once the newest open level's correct rate over
// its last `window` judged candidates reaches `threshold`.
struct PromotionOptions {
  double threshold = 0.5;
  int window = 64;

  template <class V>
  void visit_fields(V& v) {
    v.field("threshold", threshold,
            "Correct rate of the newest open level (over its last `window` candidates) that opens "
            "the next level. Default: 0.5",
            config::greater_than(0), config::at_most(1));
    v.field("window", window,
            "Judged candidates of a level the rolling correct rate is over; no promotion before "
            "the window is full. Default: 64",
            config::at_least(1));
  }
};

// Keeps a phase on the tasks whose groups carry a learning signal. A task's recent pass rate is
// its correct candidates over the candidates of its last `window` groups in this phase. Each step
// first revisits the tasks whose rate lies strictly inside (lo, hi), least recently taken first
// (the default band (0, 1): every task the policy solves sometimes, not always, as DICE filters
// its data), and fills the rest with tasks not yet sampled, in the phase's order; a task whose
// rate lies outside (too hard, or solved) is passed over. A passed-over task is not sampled again
// (its rate cannot change), unless too few tasks are left to fill a step.
struct PassRateBand {
  double lo = 0.0;
  double hi = 1.0;
  int window = 1;

  template <class V>
  void visit_fields(V& v) {
    v.field("lo", lo,
            "A task whose recent pass rate is at most this is too hard: passed over. Default: 0",
            config::at_least(0), config::at_most(1));
    v.field("hi", hi,
            "A task whose recent pass rate is at least this is solved: passed over. Default: 1",
            config::at_least(0), config::at_most(1));
    v.field("window", window, "A task's last groups its pass rate is over. Default: 1",
            config::at_least(1));
  }

  void validate(config::Checker& c) const {
    if (lo > hi) c.error("lo", "greater than hi: the band holds no pass rate");
    if (lo == hi) c.error("lo", "equal to hi: the band (lo, hi) holds no pass rate");
  }
};

// A phase's own sampling over rollout.sampling (rl phases, and eval phases that sample): each key
// left null keeps rollout.sampling's. Block size, denoising steps and max_new_tokens stay the
// rollout's: the learner's trace layout is built for them. The learner scores each sample at the
// temperature it was drawn at, so a phase's temperature is also the one its update trains.
struct PhaseSampling {
  std::optional<double> temperature;
  std::optional<Remasking> remasking;
  std::optional<double> threshold;

  template <class V>
  void visit_fields(V& v) {
    v.field("temperature", temperature,
            "Softmax temperature of this phase's rollouts and of its update's log-probs (> 0; a "
            "greedy phase is decoding: greedy); null = rollout.sampling.temperature. Default: null",
            config::greater_than(0));
    v.field("remasking", remasking,
            "Which masked tokens each step commits (rollout.sampling.remasking's values; "
            "sequential, random and entropy_bounded commit draws that follow the softmax the "
            "update trains); null = rollout.sampling.remasking. Default: null");
    v.field("threshold", threshold,
            "Confidence threshold (low_confidence_dynamic) or entropy bound (entropy_bounded); "
            "null = rollout.sampling.threshold. Default: null",
            config::greater_than(0), config::at_most(1));
  }

  bool any() const { return temperature || remasking || threshold; }
};

struct CurriculumPhase {
  std::string name;
  PhaseType type = PhaseType::kRl;
  TaskKind kind = TaskKind::kEndToEnd;
  std::vector<std::string> task_files;
  std::vector<std::string> level_order;
  int steps = 0;
  std::optional<int> tasks_per_step;
  std::optional<int> samples_per_task;
  std::optional<Decoding> decoding;
  std::optional<bool> timing;
  int refill_constant_groups = 0;
  double max_minutes = 0;
  std::string sft_data;
  std::optional<int> epochs;
  std::optional<TaskScheduling> scheduling;
  PromotionOptions promotion;
  std::optional<PassRateBand> pass_rate_band;
  std::string prompt_template;
  std::optional<RewardPolicyOptions> reward_policy;
  PhaseSampling sampling;

  template <class V>
  void visit_fields(V& v) {
    v.field("name", name, "Phase name, used in logs, checkpoints and learner.phases. Required.",
            config::required(), config::non_empty());
    v.field("type", type,
            "rl: TraceRL steps; sft: supervised fine-tuning on sft_data; eval: judge the tasks "
            "once, no update, and report Exec and fast_p per level. Default: rl");
    v.field("kind", kind,
            "infill: write the kernel core into a given skeleton; end_to_end: write the whole "
            "ModelNew file (rl and eval phases say which). Default: end_to_end");
    v.field("task_files", task_files,
            "Task JSON files, concatenated in this order (rl and eval phases). Default: []",
            config::is_path());
    v.field("level_order", level_order,
            "Task levels (the tasks' `level` values) from easy to hard; tasks of other levels are "
            "left out; empty keeps file order. Default: []");
    v.field("steps", steps,
            "Steps of an rl phase (policy updates); an eval phase takes 1 when 0. Default: 0",
            config::at_least(0));
    v.field("tasks_per_step", tasks_per_step,
            "Tasks per step; null = learner.tasks_per_step (rl), every task (eval). Default: null",
            config::at_least(1));
    v.field("samples_per_task", samples_per_task,
            "Samples per task (group size); null = learner.group_size (rl), 1 (eval). Default: "
            "null",
            config::at_least(1));
    v.field("decoding", decoding,
            "sample (rollout.sampling with this phase's `sampling` keys) or greedy (DICE's "
            "evaluation decoding); null = sample for rl, greedy for eval. Default: null");
    v.field("timing", timing,
            "Whether the reward service times correct candidates (speedup, fast_p), where "
            "reward.timing.enabled; null = eval phases do, rl phases only when reward.policy.kind "
            "reads a speedup (speedup_threshold). Timing takes the GPU to itself. Default: null");
    v.field("refill_constant_groups", refill_constant_groups,
            "Dynamic sampling (rl phases): for each group of a step whose rewards come out all "
            "equal (no signal: dropped), one more task is started in the same step, up to this "
            "many extra a step, so that more of the update's groups carry signal. Extra tasks "
            "come next in the phase's order, as the step's own do; the step waits for them. 0 "
            "is DICE's (constant groups are only dropped). Default: 0",
            config::at_least(0));
    v.field("max_minutes", max_minutes,
            "An rl phase's time budget: once this many minutes of the phase have passed, no new "
            "step starts (the steps already started finish and train), and the phases after it "
            "run as planned, so a run that must fit a time budget keeps its evaluations. 0 = "
            "no budget: every step of `steps` runs. Default: 0",
            config::at_least(0.0));
    v.field("sft_data", sft_data,
            "SFT pairs of an sft phase (learner/curriculum/sft_data.h: pytorch_code + cuda_code, "
            "or an infilling task's prefix + middle + suffix). Default: empty",
            config::is_path());
    v.field("epochs", epochs, "Passes over sft_data; null = learner.sft.epochs. Default: null",
            config::at_least(1));
    v.field("scheduling", scheduling,
            "How this rl or eval phase picks each step's tasks: sequential_select (easy to hard "
            "in level_order, wrapping) or mixed (each step draws from every open level in turn; "
            "a level opens when the one before passes `promotion`); null = the curriculum's "
            "`scheduling`. Default: null");
    v.field("promotion", promotion, "When a mixed phase opens its next level.");
    v.field("pass_rate_band", pass_rate_band,
            "Revisit tasks whose recent pass rate lies inside (lo, hi), skip those outside (rl "
            "and eval phases; see PassRateBand); {} is DICE's band (0, 1); null = off. An rl "
            "phase that starts from the weights a sampled eval phase of its kind just measured "
            "(no update between) takes that evaluation's groups as its tasks' first rates. "
            "Default: null");
    v.field("prompt_template", prompt_template,
            "Prompt template file of this phase (learner/curriculum/prompt_template.h's format, "
            "for the phase's kind; sft phases: the template of their pairs' kind); empty = "
            "rollout.prompt_templates, else the built-in one. Default: empty",
            config::is_path());
    v.field("reward_policy", reward_policy,
            "How this rl or eval phase's verdicts become rewards (reward.policy's keys); null = "
            "reward.policy. Default: null");
    v.field("sampling", sampling,
            "This phase's temperature, remasking and threshold over rollout.sampling (rl phases, "
            "and eval phases with decoding: sample); its update scores its samples at its "
            "temperature.");
  }

  void validate(config::Checker& c) const {
    if (type == PhaseType::kSft) {
      if (sft_data.empty()) c.error("sft_data", "required for an sft phase");
      if (!task_files.empty()) c.error("task_files", "an sft phase trains on sft_data only");
    } else {
      if (task_files.empty()) c.error("task_files", "required for an rl or eval phase");
      if (!sft_data.empty()) c.error("sft_data", "only an sft phase has SFT data");
      if (type == PhaseType::kRl && steps < 1) {
        c.error("steps", "an rl phase needs at least 1 step");
      }
      if (type == PhaseType::kRl && samples_per_task && *samples_per_task < 2) {
        c.error("samples_per_task", "an rl phase needs at least 2 samples per task (a group)");
      }
      if (type == PhaseType::kEval && refill_constant_groups > 0) {
        c.error("refill_constant_groups", "an eval phase judges its tasks once: nothing to refill");
      }
      if (type == PhaseType::kEval && max_minutes > 0) {
        c.error("max_minutes", "an eval phase judges all its tasks: a budget would cut it short");
      }
    }
    const Decoding decodes =
        decoding.value_or(type == PhaseType::kEval ? Decoding::kGreedy : Decoding::kSample);
    if (sampling.any() && (type == PhaseType::kSft || decodes == Decoding::kGreedy)) {
      c.error("sampling", type == PhaseType::kSft
                              ? "an sft phase samples nothing"
                              : "a greedy phase decodes at temperature 0 with "
                                "low_confidence_static; set decoding: sample to sample with these");
    }
    if (type == PhaseType::kSft) {
      if (scheduling) c.error("scheduling", "an sft phase has no tasks to schedule");
      if (pass_rate_band) c.error("pass_rate_band", "an sft phase has no tasks to filter");
      if (reward_policy) c.error("reward_policy", "an sft phase judges nothing");
    }
    for (std::size_t i = 0; i < level_order.size(); ++i) {
      for (std::size_t j = 0; j < i; ++j) {
        if (level_order[i] == level_order[j]) {
          c.error("level_order[" + std::to_string(i) + "]",
                  "level '" + level_order[i] + "' listed twice");
        }
      }
    }
  }
};

struct CurriculumOptions {
  TaskScheduling scheduling = TaskScheduling::kSequentialSelect;
  std::vector<CurriculumPhase> phases;

  template <class V>
  void visit_fields(V& v) {
    v.field(
        "scheduling", scheduling,
        "How a phase picks each step's tasks (see the header comment). Default: sequential_select");
    v.field("phases", phases, "Phases, run in this order. Required.", config::required(),
            config::non_empty());
  }

  void validate(config::Checker& c) const {
    for (std::size_t i = 0; i < phases.size(); ++i) {
      for (std::size_t j = 0; j < i; ++j) {
        if (phases[i].name == phases[j].name) {
          c.error("phases[" + std::to_string(i) + "].name",
                  "phase name '" + phases[i].name + "' used twice");
        }
      }
    }
  }
};

}  // namespace dice
