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

}  // namespace

EvalTable tally_table(const std::vector<Problem>& problems,
                      const std::map<std::string, std::vector<AnswerVerdict>>& verdicts,
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
  EvalTable table;
  for (TaskKind kind : kinds) {
    const EvalTally& tally = by_kind.at(kind);
    const std::map<std::string, TableCell> cells = tally.levels();
    std::vector<std::string> levels;
    for (const auto& [level, cell] : cells) levels.push_back(level);
    std::sort(levels.begin(), levels.end(), level_before);
    for (const std::string& level : levels)
      table.rows.push_back(row_of(kind, level, cells.at(level)));
    table.rows.push_back(row_of(kind, kAllLevels, tally.all()));
  }
  return table;
}

}  // namespace dice::eval
