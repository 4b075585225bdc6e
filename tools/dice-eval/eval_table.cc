#include "tools/dice-eval/eval_table.h"

#include <algorithm>

namespace dice::eval {
namespace {

TableRow row_of(TaskKind kind, const std::string& level, const TableCell& cell) {
  TableRow row;
  static_cast<TableCell&>(row) = cell;
  row.kind = kind;
  row.level = level;
  return row;
}

// Levels ascending by number; no level ("") last.
bool level_before(const std::string& a, const std::string& b) {
  if (a.empty() || b.empty()) return !a.empty() && b.empty();
  return std::stoi(a) < std::stoi(b);
}

// The rows of `problems` from `verdicts`: per kind in order of first appearance, its levels, then
// its "all" row. The same problems give the same rows whatever the verdicts.
std::vector<TableRow> tally_rows(const std::vector<Problem>& problems, const TaskAnswers& verdicts,
                                 const TableOptions& options) {
  std::vector<TaskKind> kinds;  // in order of first appearance
  std::map<TaskKind, EvalTally> by_kind;
  static const std::vector<AnswerVerdict> kNone;
  for (const Problem& problem : problems) {
    if (std::find(kinds.begin(), kinds.end(), problem.kind) == kinds.end()) {
      kinds.push_back(problem.kind);
      by_kind.emplace(problem.kind, EvalTally(options));
    }
    auto found = verdicts.find(problem.id);
    by_kind.at(problem.kind)
        .add_task(problem.level, found == verdicts.end() ? kNone : found->second);
  }
  std::vector<TableRow> rows;
  for (TaskKind kind : kinds) {
    const EvalTally& tally = by_kind.at(kind);
    const std::map<std::string, TableCell> cells = tally.levels();
    std::vector<std::string> levels;
    for (const auto& [level, cell] : cells) levels.push_back(level);
    std::sort(levels.begin(), levels.end(), level_before);
    for (const std::string& level : levels) rows.push_back(row_of(kind, level, cells.at(level)));
    rows.push_back(row_of(kind, kAllLevels, tally.all()));
  }
  return rows;
}

}  // namespace

EvalTable tally_table(const std::vector<Problem>& problems, const TaskAnswers& verdicts,
                      const TaskAnswers& own_kernels_only, const TableOptions& options) {
  const std::vector<TableRow> rows = tally_rows(problems, verdicts, options);
  const std::vector<TableRow> own_rows = tally_rows(problems, own_kernels_only, options);
  EvalTable table;
  table.rows = rows;
  for (std::size_t i = 0; i < rows.size(); ++i) table.rows[i].own_kernels_only = own_rows[i];
  return table;
}

EvalTable tally_table(const std::vector<Problem>& problems, const TaskAnswers& verdicts,
                      const TableOptions& options) {
  return tally_table(problems, verdicts, verdicts, options);
}

}  // namespace dice::eval
