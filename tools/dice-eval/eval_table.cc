#include "tools/dice-eval/eval_table.h"

#include <algorithm>
#include <cmath>

namespace dice::eval {
namespace {

// Sums over a row's problems; each problem adds its share of its n answers.
struct RowSums {
  int problems = 0, incomplete = 0, answers = 0;
  double exec = 0, compiled = 0, rewarded = 0, fast_1 = 0, fast_2 = 0, fast_1_raw = 0,
         fast_2_raw = 0;
  int noise_rejected_1 = 0, noise_rejected_2 = 0;
  std::map<int, double> pass_at_k;
  double log_speedup_sum = 0;
  int timed = 0;
};

void add_problem(const std::vector<AnswerVerdict>& answers, const TableOptions& options,
                 RowSums* row) {
  const int n = std::max(options.samples, 1);
  int correct = 0, compiled = 0, rewarded = 0, fast_1 = 0, fast_2 = 0, raw_1 = 0, raw_2 = 0,
      judged = 0;
  for (int i = 0; i < n && i < static_cast<int>(answers.size()); ++i) {
    const AnswerVerdict& a = answers[static_cast<std::size_t>(i)];
    if (!a.judged) continue;
    ++judged;
    correct += a.correct;
    compiled += a.compiled;
    rewarded += a.rewarded;
    const bool f1 = counts_as_fast(a, 1, options.noise_z);
    const bool f2 = counts_as_fast(a, 2, options.noise_z);
    const bool r1 = counts_as_fast_raw(a, 1);
    const bool r2 = counts_as_fast_raw(a, 2);
    fast_1 += f1;
    fast_2 += f2;
    raw_1 += r1;
    raw_2 += r2;
    row->noise_rejected_1 += r1 && !f1;
    row->noise_rejected_2 += r2 && !f2;
    if (a.correct && a.speedup > 0) {
      row->log_speedup_sum += std::log(a.speedup);
      ++row->timed;
    }
  }
  ++row->problems;
  row->answers += judged;
  row->incomplete += judged < n;
  row->exec += static_cast<double>(correct) / n;
  row->compiled += static_cast<double>(compiled) / n;
  row->rewarded += static_cast<double>(rewarded) / n;
  row->fast_1 += static_cast<double>(fast_1) / n;
  row->fast_2 += static_cast<double>(fast_2) / n;
  row->fast_1_raw += static_cast<double>(raw_1) / n;
  row->fast_2_raw += static_cast<double>(raw_2) / n;
  for (int k : options.pass_k) row->pass_at_k[k] += pass_at_k(n, correct, k);
}

TableRow finish(TaskKind kind, const std::string& level, const RowSums& s) {
  TableRow row;
  row.kind = kind;
  row.level = level;
  row.problems = s.problems;
  row.incomplete = s.incomplete;
  row.answers = s.answers;
  const double count = std::max(s.problems, 1);
  row.exec = s.exec / count;
  row.fast_0 = row.exec;
  row.compiled = s.compiled / count;
  row.rewarded = s.rewarded / count;
  row.fast_1 = s.fast_1 / count;
  row.fast_2 = s.fast_2 / count;
  row.fast_1_raw = s.fast_1_raw / count;
  row.fast_2_raw = s.fast_2_raw / count;
  row.noise_rejected_1 = s.noise_rejected_1;
  row.noise_rejected_2 = s.noise_rejected_2;
  for (const auto& [k, sum] : s.pass_at_k) row.pass_at_k[k] = sum / count;
  row.timed = s.timed;
  row.geo_mean_speedup = s.timed > 0 ? std::exp(s.log_speedup_sum / s.timed) : 0.0;
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
  std::map<TaskKind, std::map<std::string, RowSums>> by_level;
  std::map<TaskKind, RowSums> all;
  static const std::vector<AnswerVerdict> kNone;
  for (const Problem& problem : problems) {
    if (std::find(kinds.begin(), kinds.end(), problem.kind) == kinds.end()) {
      kinds.push_back(problem.kind);
    }
    auto found = verdicts.find(problem.id);
    const auto& answers = found == verdicts.end() ? kNone : found->second;
    add_problem(answers, options, &by_level[problem.kind][problem.level]);
    add_problem(answers, options, &all[problem.kind]);
  }
  EvalTable table;
  for (TaskKind kind : kinds) {
    std::vector<std::string> levels;
    for (const auto& [level, sums] : by_level[kind]) levels.push_back(level);
    std::sort(levels.begin(), levels.end(), level_before);
    for (const std::string& level : levels) {
      table.rows.push_back(finish(kind, level, by_level[kind][level]));
    }
    table.rows.push_back(finish(kind, kAllLevels, all[kind]));
  }
  return table;
}

}  // namespace dice::eval
