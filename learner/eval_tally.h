// The table the field reports for a checkpoint (KernelBench's semantics, REFERENCE.md section 4),
// from the verdicts of an evaluation phase (a curriculum phase with update_policy false):
//
//   per level: Exec   = correct tasks / all tasks
//              fast_p = tasks whose kernel is correct AND faster than eager PyTorch by more than
//                       p beyond its timing noise, over ALL tasks of the level; fast_0 = Exec.
//                       The rule is dice-eval's (tasks/answer_scoring.h: the speedup's one-sided
//                       lower confidence bound > p, z 1.645 unless set; z 0: speedup > p)
//              geo-mean speedup of the correct kernels
//
// A task counts as correct when its first sample is (greedy decoding gives one sample; with more
// samples, pass@k counts a task when any of its first k is). A task without a verdict (lost,
// timed out) counts as not correct: the denominator is every task asked.
//
// A pool evaluation (an eval phase sampling each task N times, decoding: sample) reads pass@1 as
// the mean over tasks of each task's correct samples / its samples: every sample counts, so N
// samples say far more than the first one does. Its interval here is over tasks (the mean's
// 95% normal interval), for the log line; tools/learning-report gives the per-task intervals
// and one that resamples op keys, as tasks of one key are not independent.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "tasks/answer_scoring.h"

namespace dice {

struct EvalCell {
  int tasks = 0;
  int correct = 0;  // pass@1
  int pass_at_k = 0;
  int fast_1 = 0;
  int fast_2 = 0;
  double log_speedup_sum = 0;  // over the correct tasks that were timed
  int timed = 0;
  int samples = 0;              // judged samples over all tasks
  int most_samples = 0;         // the most samples one task had
  double pass_at_1_sum = 0;     // over tasks: the task's correct samples / its samples
  double pass_at_1_sq_sum = 0;  // over tasks: the square of that

  double exec() const { return tasks ? static_cast<double>(correct) / tasks : 0.0; }
  double fast(int p) const {
    return tasks ? static_cast<double>(p == 0 ? correct : p == 1 ? fast_1 : fast_2) / tasks : 0.0;
  }
  double geo_mean_speedup() const;  // 0 when none was timed
  // Mean over tasks of each task's share of correct samples (a task without one: 0).
  double pass_at_1() const { return tasks ? pass_at_1_sum / tasks : 0.0; }
  // Half the width of pass_at_1's 95% interval over tasks (1.96 standard errors of the mean of
  // the tasks' shares); 0 for fewer than 2 tasks.
  double pass_at_1_half_width() const;
};

class EvalTally {
 public:
  // `noise_z`: the z of the speedup's noise check (0: KernelBench's plain speedup > p).
  explicit EvalTally(double noise_z = eval::kDefaultNoiseZ) : noise_z_(noise_z) {}

  // One task's samples, in sample order: their verdicts (correct, speedup, its timing spread).
  using Sample = eval::AnswerVerdict;
  // `level` as the task file names it ("" for none); `k` for pass@k (at least 1).
  void add_task(const std::string& level, const std::vector<Sample>& samples, int k);

  const std::map<std::string, EvalCell>& levels() const { return levels_; }
  const EvalCell& all() const { return all_; }

  // "level 1: exec 0.50 fast_1 0.25 fast_2 0.00 (8 tasks) | ... | all: ..." for the log; where a
  // task had several samples, each cell adds "pass@1 0.531 +-0.071 (8 samples a task)".
  std::string summary() const;

 private:
  double noise_z_;
  std::map<std::string, EvalCell> levels_;
  EvalCell all_;
};

}  // namespace dice
