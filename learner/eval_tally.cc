#include "learner/eval_tally.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace dice {

double EvalCell::geo_mean_speedup() const {
  return timed ? std::exp(log_speedup_sum / timed) : 0.0;
}

double EvalCell::pass_at_1_half_width() const {
  if (tasks < 2) return 0.0;
  const double mean = pass_at_1();
  const double variance =
      std::max(0.0, (pass_at_1_sq_sum - tasks * mean * mean) / static_cast<double>(tasks - 1));
  return 1.96 * std::sqrt(variance / tasks);
}

void EvalTally::add_task(const std::string& level, const std::vector<Sample>& samples, int k) {
  const bool first = !samples.empty() && samples.front().correct;
  bool any = false;
  for (int i = 0; i < static_cast<int>(samples.size()) && i < std::max(k, 1); ++i) {
    any = any || samples[static_cast<std::size_t>(i)].correct;
  }
  int correct_samples = 0;
  for (const Sample& s : samples) correct_samples += s.correct ? 1 : 0;
  const double share =
      samples.empty() ? 0.0 : correct_samples / static_cast<double>(samples.size());
  const double speedup = first ? samples.front().speedup : 0.0;
  const bool fast_1 = first && eval::counts_as_fast(samples.front(), 1.0, noise_z_);
  const bool fast_2 = first && eval::counts_as_fast(samples.front(), 2.0, noise_z_);
  for (EvalCell* cell : {&levels_[level], &all_}) {
    ++cell->tasks;
    cell->correct += first;
    cell->pass_at_k += any;
    cell->fast_1 += fast_1;
    cell->fast_2 += fast_2;
    cell->samples += static_cast<int>(samples.size());
    cell->most_samples = std::max(cell->most_samples, static_cast<int>(samples.size()));
    cell->pass_at_1_sum += share;
    cell->pass_at_1_sq_sum += share * share;
    if (first && speedup > 0) {
      cell->log_speedup_sum += std::log(speedup);
      ++cell->timed;
    }
  }
}

std::string EvalTally::summary() const {
  auto cell_text = [](const std::string& name, const EvalCell& c) {
    char text[240];
    int n = std::snprintf(text, sizeof text, "%s: exec %.3f fast_1 %.3f fast_2 %.3f (%d tasks)",
                          name.c_str(), c.exec(), c.fast(1), c.fast(2), c.tasks);
    if (c.most_samples > 1 && n > 0 && static_cast<std::size_t>(n) < sizeof text) {
      std::snprintf(text + n, sizeof text - static_cast<std::size_t>(n),
                    " pass@1 %.3f +-%.3f (%d samples a task)", c.pass_at_1(),
                    c.pass_at_1_half_width(), c.most_samples);
    }
    return std::string(text);
  };
  std::string out;
  for (const auto& [level, cell] : levels_) {
    out += cell_text(level.empty() ? "no level" : "level " + level, cell) + " | ";
  }
  return out + cell_text("all", all_);
}

}  // namespace dice
