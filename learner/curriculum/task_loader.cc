#include "learner/curriculum/task_loader.h"

#include <algorithm>
#include <unordered_map>

namespace dice {

Result<std::vector<LearnerTask>> load_task_file(const std::string& path, TaskKind kind,
                                                const PromptTemplate& prompt) {
  const bool infill = kind == TaskKind::kInfill;
  DICE_ASSIGN_OR_RETURN(
      std::vector<TaskFileEntry> entries,
      read_task_file(path, {infill ? schema::Phase::INFILL : schema::Phase::E2E, ""}));
  std::vector<LearnerTask> tasks;
  tasks.reserve(entries.size());
  for (TaskFileEntry& entry : entries) {
    LearnerTask task;
    task.id = std::move(entry.id);
    task.kind = kind;
    task.level = std::move(entry.level);
    task.level_number = entry.level_number;
    task.reference_source = std::move(entry.pytorch_code);
    task.infill_prefix = std::move(entry.prefix);
    task.infill_suffix = std::move(entry.suffix);
    task.origin = std::move(entry.origin);
    task.shape_variants = std::move(entry.shape_variants);
    task.prompt = prompt.render(
        PromptFields{task.reference_source, task.infill_prefix, task.infill_suffix, task.id});
    tasks.push_back(std::move(task));
  }
  return tasks;
}

std::vector<LearnerTask> order_by_level(std::vector<LearnerTask> tasks,
                                        const std::vector<std::string>& level_order) {
  if (level_order.empty()) return tasks;
  auto rank = [&](const LearnerTask& task) {
    auto found = std::find(level_order.begin(), level_order.end(), task.level);
    return static_cast<std::size_t>(found - level_order.begin());
  };
  tasks.erase(std::remove_if(tasks.begin(), tasks.end(),
                             [&](const LearnerTask& t) { return rank(t) == level_order.size(); }),
              tasks.end());
  std::stable_sort(tasks.begin(), tasks.end(),
                   [&](const LearnerTask& a, const LearnerTask& b) { return rank(a) < rank(b); });
  return tasks;
}

Result<std::vector<LearnerTask>> load_phase_tasks(
    const CurriculumPhase& phase, const std::map<TaskKind, PromptTemplate>& prompts) {
  auto prompt = prompts.find(phase.kind);
  if (prompt == prompts.end()) {
    return Status::internal("phase " + phase.name + ": no prompt template for its kind");
  }
  std::vector<LearnerTask> all;
  for (const std::string& file : phase.task_files) {
    auto tasks = load_task_file(file, phase.kind, prompt->second);
    if (!tasks.ok()) {
      return tasks.status().with_context("curriculum phase '" + phase.name + "'");
    }
    for (LearnerTask& task : tasks.value()) all.push_back(std::move(task));
  }
  std::unordered_map<std::string, std::string> seen;  // id -> origin
  for (const LearnerTask& task : all) {
    auto [it, fresh] = seen.emplace(task.id, task.origin);
    if (!fresh) {
      return Status::invalid_argument(task.origin + ": task id \"" + task.id +
                                      "\" already used at " + it->second + " (phase " + phase.name +
                                      ")");
    }
  }
  std::vector<LearnerTask> ordered = order_by_level(std::move(all), phase.level_order);
  if (ordered.empty()) {
    std::string levels;
    for (const std::string& level : phase.level_order)
      levels += (levels.empty() ? "" : ", ") + level;
    return Status::invalid_argument("phase " + phase.name + ": no task left (level_order [" +
                                    levels + "] matches no task's level)");
  }
  return ordered;
}

void fill_task(const LearnerTask& task, schema::Task::Builder out) {
  out.setId(task.id);
  out.setPhase(task.kind == TaskKind::kInfill ? schema::Phase::INFILL : schema::Phase::E2E);
  out.setLevel(task.level_number);
  out.setPrompt(task.prompt);
  out.setReferenceSource(task.reference_source);
  out.setInfillPrefix(task.infill_prefix);
  out.setInfillSuffix(task.infill_suffix);
  set_shape_variants(task.shape_variants, out);
}

}  // namespace dice
