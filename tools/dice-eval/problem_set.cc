#include "tools/dice-eval/problem_set.h"

#include <algorithm>
#include <filesystem>
#include <map>

#include "tools/dice-eval/kernelbench_reader.h"
#include "tools/dice-eval/task_json_reader.h"

namespace dice::eval {
namespace fs = std::filesystem;
namespace {

void append(std::vector<Problem>* to, std::vector<Problem> from) {
  for (Problem& p : from) to->push_back(std::move(p));
}

Status read_folder(const std::string& path, const ProblemSetOptions& options, ProblemSet* set) {
  const auto heldout = heldout_files(path);
  if (!heldout.empty()) {
    set->form = "heldout";
    for (const auto& [file, kind] : heldout) {
      DICE_ASSIGN_OR_RETURN(auto problems, read_task_json(file, {kind, options.level}));
      append(&set->problems, std::move(problems));
    }
    return Status::ok_status();
  }
  const auto levels = find_level_folders(path);
  if (!levels.empty()) {
    set->form = "kernelbench";
    for (const auto& [level, dir] : levels) {
      DICE_ASSIGN_OR_RETURN(auto problems, read_kernelbench_folder(dir, level));
      append(&set->problems, std::move(problems));
    }
    return Status::ok_status();
  }
  bool has_python = false;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(path, ec)) {
    has_python = has_python || entry.path().extension() == ".py";
  }
  if (!has_python) {
    return Status::invalid_argument(
        "problem set " + path +
        ": not a problem set: expected level<N>/ folders of KernelBench problems (or "
        "KernelBench/level<N>/), <n>_<Name>.py problem files, a curriculum's "
        "heldout_infill.json / heldout_e2e.json, or a task JSON file");
  }
  set->form = "kernelbench-folder";
  std::string level = level_of_folder(path);
  if (level.empty()) level = options.level;
  if (level.empty()) {
    return Status::invalid_argument("problem set " + path +
                                    ": the folder is not named level<N>, so its level is "
                                    "unknown: pass --level N");
  }
  DICE_ASSIGN_OR_RETURN(set->problems, read_kernelbench_folder(path, level));
  return Status::ok_status();
}

// Keeps the problems of options.levels, and the first per_level of each (kind, level).
std::vector<Problem> filtered(std::vector<Problem> problems, const ProblemSetOptions& options) {
  std::vector<Problem> kept;
  std::map<std::pair<TaskKind, std::string>, int> taken;
  for (Problem& problem : problems) {
    if (!options.levels.empty() && std::find(options.levels.begin(), options.levels.end(),
                                             problem.level) == options.levels.end()) {
      continue;
    }
    int& count = taken[{problem.kind, problem.level}];
    if (options.per_level > 0 && count >= options.per_level) continue;
    ++count;
    kept.push_back(std::move(problem));
  }
  return kept;
}

}  // namespace

Result<ProblemSet> read_problem_set(const std::string& path, const ProblemSetOptions& options) {
  if (!options.level.empty() && !is_level_text(options.level)) {
    return Status::invalid_argument("--level '" + options.level + "': expected 0..255");
  }
  ProblemSetOptions normal = options;  // levels as the readers write them ("01" -> "1")
  for (std::string& level : normal.levels) {
    if (!is_level_text(level)) {
      return Status::invalid_argument("--levels: '" + level + "' is not a level (0..255)");
    }
    level = std::to_string(std::stoi(level));
  }
  if (!normal.level.empty()) normal.level = std::to_string(std::stoi(normal.level));
  ProblemSet set;
  set.path = path;
  std::error_code ec;
  if (path.empty() || !fs::exists(path, ec)) {
    return Status::not_found("problem set " + path + ": no such file or folder");
  }
  if (fs::is_directory(path, ec)) {
    DICE_RETURN_IF_ERROR(read_folder(path, normal, &set));
  } else {
    set.form = "task-json";
    DICE_ASSIGN_OR_RETURN(set.problems, read_task_json(path, {normal.kind, normal.level}));
  }
  std::map<std::string, std::string> seen;  // id -> origin
  for (const Problem& problem : set.problems) {
    auto [it, fresh] = seen.emplace(problem.id, problem.origin);
    if (!fresh) {
      return Status::invalid_argument(problem.origin + ": task id \"" + problem.id +
                                      "\" is also used at " + it->second);
    }
  }
  const std::size_t read = set.problems.size();
  set.problems = filtered(std::move(set.problems), normal);
  if (set.problems.empty()) {
    return Status::invalid_argument("problem set " + path + ": none of its " +
                                    std::to_string(read) +
                                    " problems is left after --levels / --per-level");
  }
  return set;
}

}  // namespace dice::eval
