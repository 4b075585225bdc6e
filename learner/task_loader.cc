#include "learner/task_loader.h"

#include "learner/json_file.h"

#include <algorithm>
#include <boost/json.hpp>
#include <fstream>
#include <sstream>
#include <unordered_map>

namespace dice {
namespace {

// An id or level written as a string or a non-negative integer, as text.
Result<std::string> text_or_integer(const json::value& value, const char* key,
                                    const std::string& where) {
  if (value.is_string()) return std::string(value.get_string().c_str(), value.get_string().size());
  if (value.is_uint64()) return std::to_string(value.get_uint64());
  if (value.is_int64() && value.get_int64() >= 0) return std::to_string(value.get_int64());
  return Status::invalid_argument(where + ": \"" + key +
                                  "\" must be a string or a non-negative integer, got " +
                                  json::serialize(value).substr(0, 40));
}

Result<LearnerTask> read_task(const json::value& item, TaskKind kind, const PromptTemplate& prompt,
                              const std::string& where) {
  if (!item.is_object()) return Status::invalid_argument(where + ": a task must be a JSON object");
  const json::object& entry = item.get_object();
  LearnerTask task;
  task.kind = kind;
  task.origin = where;
  const json::value* id = entry.if_contains("id");
  if (id == nullptr) id = entry.if_contains("idx");
  if (id == nullptr) return Status::invalid_argument(where + ": missing \"id\" (or \"idx\")");
  DICE_ASSIGN_OR_RETURN(task.id, text_or_integer(*id, "id", where));
  if (task.id.empty()) return Status::invalid_argument(where + ": empty task id");
  if (task.id.find('\0') != std::string::npos) {
    return Status::invalid_argument(where + ": task id holds a NUL byte");
  }
  if (const json::value* level = entry.if_contains("level")) {
    DICE_ASSIGN_OR_RETURN(task.level, text_or_integer(*level, "level", where));
    const bool digits = !task.level.empty() && task.level.size() <= 3 &&
                        std::all_of(task.level.begin(), task.level.end(),
                                    [](char c) { return c >= '0' && c <= '9'; });
    if (!digits || std::stoi(task.level) > 255) {
      return Status::invalid_argument(where + ": \"level\" must be 0..255, got \"" + task.level +
                                      "\"");
    }
    task.level_number = static_cast<std::uint8_t>(std::stoi(task.level));
  }
  DICE_ASSIGN_OR_RETURN(task.reference_source, string_field(entry, "pytorch_code", true, where));
  if (task.reference_source.empty()) {
    return Status::invalid_argument(where + ": \"pytorch_code\" is empty");
  }
  DICE_ASSIGN_OR_RETURN(task.shape_variants, read_shape_variants(entry, where));
  if (kind == TaskKind::kInfill) {
    DICE_ASSIGN_OR_RETURN(task.infill_prefix, string_field(entry, "prefix", true, where));
    DICE_ASSIGN_OR_RETURN(task.infill_suffix, string_field(entry, "suffix", true, where));
    if (task.infill_prefix.empty() && task.infill_suffix.empty()) {
      return Status::invalid_argument(where +
                                      ": an infill task needs a non-empty \"prefix\" or "
                                      "\"suffix\" (the skeleton around the hole)");
    }
  }
  task.prompt = prompt.render(
      PromptFields{task.reference_source, task.infill_prefix, task.infill_suffix, task.id});
  return task;
}

}  // namespace

Result<std::vector<LearnerTask>> load_task_file(const std::string& path, TaskKind kind,
                                                const PromptTemplate& prompt) {
  DICE_ASSIGN_OR_RETURN(json::value root, parse_json_file(path, "task file"));
  if (!root.is_array()) {
    return Status::invalid_argument("task file " + path + ": expected a JSON array of tasks");
  }
  std::vector<LearnerTask> tasks;
  const json::array& items = root.get_array();
  tasks.reserve(items.size());
  for (std::size_t i = 0; i < items.size(); ++i) {
    DICE_ASSIGN_OR_RETURN(LearnerTask task,
                          read_task(items[i], kind, prompt, path + ":[" + std::to_string(i) + "]"));
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
