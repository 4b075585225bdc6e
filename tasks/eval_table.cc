#include "tasks/eval_table.h"

#include <algorithm>
#include <cmath>
#include <utility>

namespace dice::eval {

EvalTally::EvalTally(TableOptions options) : options_(std::move(options)) {}

void EvalTally::add_task(const std::string& level, const std::vector<AnswerVerdict>& answers) {
  add(answers, &levels_[level]);
  add(answers, &all_);
}

void EvalTally::add(const std::vector<AnswerVerdict>& answers, Sums* row) const {
  const int n = std::max(options_.samples, 1);
  int correct = 0, compiled = 0, rewarded = 0, fast_1 = 0, fast_2 = 0, raw_1 = 0, raw_2 = 0,
      judged = 0;
  for (int i = 0; i < n && i < static_cast<int>(answers.size()); ++i) {
    const AnswerVerdict& a = answers[static_cast<std::size_t>(i)];
    if (!a.judged) continue;
    ++judged;
    correct += a.correct;
    compiled += a.compiled;
    rewarded += a.rewarded;
    const bool f1 = counts_as_fast(a, 1, options_.noise_z);
    const bool f2 = counts_as_fast(a, 2, options_.noise_z);
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
  const double share = static_cast<double>(correct) / n;
  ++row->problems;
  row->answers += judged;
  row->incomplete += judged < n;
  row->exec += share;
  row->exec_squares += share * share;
  row->compiled += static_cast<double>(compiled) / n;
  row->rewarded += static_cast<double>(rewarded) / n;
  row->fast_1 += static_cast<double>(fast_1) / n;
  row->fast_2 += static_cast<double>(fast_2) / n;
  row->fast_1_raw += static_cast<double>(raw_1) / n;
  row->fast_2_raw += static_cast<double>(raw_2) / n;
  for (int k : options_.pass_k) row->pass_at_k[k] += pass_at_k(n, correct, k);
}

TableCell EvalTally::cell(const Sums& s) {
  TableCell row;
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
  if (s.problems >= 2) {
    const double variance = std::max(0.0, (s.exec_squares - s.problems * row.exec * row.exec) /
                                              static_cast<double>(s.problems - 1));
    row.exec_half_width = 1.96 * std::sqrt(variance / s.problems);
  }
  return row;
}

std::map<std::string, TableCell> EvalTally::levels() const {
  std::map<std::string, TableCell> rows;
  for (const auto& [level, sums] : levels_) rows.emplace(level, cell(sums));
  return rows;
}

TableCell EvalTally::all() const {
  return cell(all_);
}

}  // namespace dice::eval
