#include "tools/dice-eval/task_json_reader.h"

#include <filesystem>

#include "tasks/task_file.h"

namespace dice::eval {

Result<std::vector<Problem>> read_task_json(const std::string& path,
                                            const TaskJsonOptions& options) {
  TaskFileOptions file_options;
  if (options.kind) {
    file_options.phase =
        *options.kind == TaskKind::kInfill ? schema::Phase::INFILL : schema::Phase::E2E;
  }
  file_options.default_level = options.level;
  DICE_ASSIGN_OR_RETURN(std::vector<TaskFileEntry> entries, read_task_file(path, file_options));
  if (entries.empty()) return Status::invalid_argument(path + ": the array holds no task");
  std::vector<Problem> problems;
  problems.reserve(entries.size());
  for (TaskFileEntry& entry : entries) {
    Problem problem;
    problem.id = std::move(entry.id);
    problem.level = std::move(entry.level);
    problem.kind = entry.phase == schema::Phase::INFILL ? TaskKind::kInfill : TaskKind::kEndToEnd;
    problem.pytorch_code = std::move(entry.pytorch_code);
    problem.prefix = std::move(entry.prefix);
    problem.suffix = std::move(entry.suffix);
    problem.shape_variants = shape_variants_json(entry.shape_variants);
    problem.origin = std::move(entry.origin);
    problems.push_back(std::move(problem));
  }
  return problems;
}

std::vector<std::pair<std::string, TaskKind>> heldout_files(const std::string& dir) {
  std::vector<std::pair<std::string, TaskKind>> files;
  for (const auto& [name, kind] : {std::pair{"heldout_infill.json", TaskKind::kInfill},
                                   std::pair{"heldout_e2e.json", TaskKind::kEndToEnd}}) {
    const std::filesystem::path path = std::filesystem::path(dir) / name;
    std::error_code ec;
    if (std::filesystem::is_regular_file(path, ec)) files.emplace_back(path.string(), kind);
  }
  return files;
}

}  // namespace dice::eval
