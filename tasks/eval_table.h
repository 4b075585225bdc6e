// The table the field reports for a checkpoint (the DICE paper's, KernelBench's semantics,
// REFERENCE.md section 4), one for dice-eval's table (tools/dice-eval/eval_table.h: a row per
// kind and level) and the learner's in-run evaluation (an eval phase: a row per level, logged and
// written as eval/ metrics). Every row is over ALL the tasks of its level: a task without a
// verdict counts as not correct (the denominator is every task asked).
//
// With n samples a task, every rate is the mean over the row's tasks of the task's share of its
// n samples (the unbiased estimate of the one-sample rate, pass@1; a missing sample counts as
// wrong). With one sample a task (greedy decoding) that is the fraction of tasks:
//   exec = fast_0  samples correct                       (tasks/answer_scoring.h)
//   fast_p         samples correct and faster than p by more than the timing noise
//   fast_p_raw     samples correct and speedup > p (KernelBench's rule, for comparison)
//   compiled       samples that compiled
//   rewarded       samples whose reward was > 0 (outside reward.mode full: what the mode checked)
//   pass@k         the unbiased pass@k per task (tasks/answer_scoring.h), for each k asked
// and the geometric mean of the speedups of the row's correct, timed samples (0 when none).
// exec_half_width is half of exec's 95% normal interval over tasks (the tasks' shares as the
// sample), a guide for a log line; tools/learning-report gives per-task intervals and one that
// resamples op keys, as tasks of one key are not independent.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "tasks/answer_scoring.h"

namespace dice::eval {

struct TableOptions {
  int samples = 1;                  // samples asked per task (n)
  std::vector<int> pass_k;          // k of each pass@k column, each in [1, samples]
  double noise_z = kDefaultNoiseZ;  // tasks/answer_scoring.h; 0: no noise check
};

// The numbers of one row.
struct TableCell {
  int problems = 0;    // tasks in the row
  int incomplete = 0;  // tasks with fewer than `samples` verdicts (missing ones count as wrong)
  double exec = 0, compiled = 0, rewarded = 0;
  double fast_0 = 0, fast_1 = 0, fast_2 = 0;
  double fast_1_raw = 0, fast_2_raw = 0;
  int noise_rejected_1 = 0, noise_rejected_2 = 0;  // samples fast by the raw rule, not by ours
  std::map<int, double> pass_at_k;
  double geo_mean_speedup = 0;  // of the correct, timed samples
  int timed = 0;                // how many samples that mean is over
  int answers = 0;              // verdicts the row has
  double exec_half_width = 0;   // 1.96 standard errors of exec over tasks; 0 under 2 tasks
};

// The table's sums while tasks are added, by level and over all.
class EvalTally {
 public:
  explicit EvalTally(TableOptions options = {});

  // One task's verdicts by sample index (a missing one: absent at the end, or judged false);
  // `level` as the task file names it ("" for none).
  void add_task(const std::string& level, const std::vector<AnswerVerdict>& answers);

  const TableOptions& options() const { return options_; }
  // A row per level that has a task (std::map order: "" first), and the row of every task.
  std::map<std::string, TableCell> levels() const;
  TableCell all() const;

 private:
  // Sums over a row's tasks; each task adds its share of its n samples.
  struct Sums {
    int problems = 0, incomplete = 0, answers = 0;
    double exec = 0, exec_squares = 0, compiled = 0, rewarded = 0, fast_1 = 0, fast_2 = 0,
           fast_1_raw = 0, fast_2_raw = 0;
    int noise_rejected_1 = 0, noise_rejected_2 = 0;
    std::map<int, double> pass_at_k;
    double log_speedup_sum = 0;
    int timed = 0;
  };
  void add(const std::vector<AnswerVerdict>& answers, Sums* sums) const;
  static TableCell cell(const Sums& sums);

  TableOptions options_;
  std::map<std::string, Sums> levels_;
  Sums all_;
};

}  // namespace dice::eval
