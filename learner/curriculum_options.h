// The RL curriculum: phases run in order (DICE: kernel infilling, then end-to-end), each starting
// from the weights the previous one ended with. A phase draws its tasks by "sequential select":
// its task files are concatenated, sorted stably by level_order (easy to hard; tasks keep file
// order within a level), and each step takes the next tasks_per_step tasks, wrapping to the start
// when the list runs out.
//
// Lives in its own YAML file, named by `curriculum_file` in the main config. Task file paths are
// relative to the curriculum file's directory (or absolute); see common/config/load.h.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/config/config_errors.h"
#include "common/config/field_checks.h"

namespace dice {

// Which prompt and reward skeleton a task gets.
enum class TaskKind { kInfill, kEndToEnd };
inline constexpr config::EnumName<TaskKind> kTaskKindNames[] = {
    {TaskKind::kInfill, "infill"}, {TaskKind::kEndToEnd, "end_to_end"}};
constexpr const auto& enum_names(TaskKind) {
  return kTaskKindNames;
}

enum class TaskScheduling { kSequentialSelect };
inline constexpr config::EnumName<TaskScheduling> kTaskSchedulingNames[] = {
    {TaskScheduling::kSequentialSelect, "sequential_select"}};
constexpr const auto& enum_names(TaskScheduling) {
  return kTaskSchedulingNames;
}

struct CurriculumPhase {
  std::string name;
  TaskKind kind = TaskKind::kEndToEnd;
  std::vector<std::string> task_files;
  std::vector<std::string> level_order;
  int steps = 0;
  std::optional<int> tasks_per_step;
  std::optional<int> samples_per_task;

  template <class V>
  void visit_fields(V& v) {
    v.field("name", name, "Phase name, used in logs, checkpoints and learner.phases. Required.",
            config::required(), config::non_empty());
    v.field("kind", kind,
            "infill: write the kernel core into a given skeleton; end_to_end: write the whole "
            "ModelNew file. Required.",
            config::required());
    v.field("task_files", task_files, "Task JSON files, concatenated in this order. Required.",
            config::required(), config::non_empty(), config::is_path());
    v.field("level_order", level_order,
            "Task levels (the tasks' `level` values) from easy to hard; tasks of other levels are "
            "left out; empty keeps file order. Default: []");
    v.field("steps", steps, "Policy updates in this phase. Required.", config::required(),
            config::at_least(1));
    v.field("tasks_per_step", tasks_per_step,
            "Tasks per update; null = learner.tasks_per_step. Default: null", config::at_least(1));
    v.field("samples_per_task", samples_per_task,
            "Samples per task (group size); null = learner.group_size. Default: null",
            config::at_least(2));
  }

  void validate(config::Checker& c) const {
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
