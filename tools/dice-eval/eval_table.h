// The table the field reports for a checkpoint (the DICE paper's, KernelBench's semantics): one
// row per (kind, level) of the problem set and an "all" row per kind, each over ALL the problems
// of its row (a problem without a verdict counts as not correct: the denominator is every
// problem asked).
//
// With n answers per problem (--samples), every rate is the mean over the row's problems of the
// problem's share of its n answers (the unbiased estimate of the one-answer rate; with n = 1,
// the fraction of problems):
//   exec = fast_0  answers correct                 (tasks/answer_scoring.h)
//   fast_p         answers correct and faster than p by more than the noise
//   (tasks/answer_scoring.h) fast_p_raw     answers correct and speedup > p (KernelBench's rule,
//   for comparison) compiled       answers that compiled rewarded       answers whose reward was >
//   0 (outside reward.mode full: what the mode checked) pass@k         the unbiased pass@k per
//   problem (tasks/answer_scoring.h), for each k asked
// and the geometric mean of the speedups of the row's correct, timed answers (0 when none).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "tasks/answer_scoring.h"
#include "tools/dice-eval/problem.h"

namespace dice::eval {

struct TableOptions {
  int samples = 1;                  // answers asked per problem
  std::vector<int> pass_k;          // k of each pass@k column, each in [1, samples]
  double noise_z = kDefaultNoiseZ;  // tasks/answer_scoring.h; 0: no noise check
};

inline constexpr char kAllLevels[] = "all";

struct TableRow {
  TaskKind kind = TaskKind::kEndToEnd;
  std::string level;  // "1", ...; "" for problems without a level; kAllLevels for the kind's total
  int problems = 0;
  int incomplete = 0;  // problems with fewer than `samples` verdicts (missing ones count as wrong)
  double exec = 0, compiled = 0, rewarded = 0;
  double fast_0 = 0, fast_1 = 0, fast_2 = 0;
  double fast_1_raw = 0, fast_2_raw = 0;
  int noise_rejected_1 = 0, noise_rejected_2 = 0;  // answers fast by the raw rule, not by ours
  std::map<int, double> pass_at_k;
  double geo_mean_speedup = 0;  // of the correct, timed answers
  int timed = 0;                // how many answers that mean is over
  int answers = 0;              // verdicts the row has
};

struct EvalTable {
  std::vector<TableRow> rows;  // per kind in order of first appearance: levels ascending
                               // (no level last), then the kind's "all" row
};

// The table of `problems` from `verdicts` (task id -> its answers by sample index; a task not in
// the map, or a shorter list, has missing answers).
EvalTable tally_table(const std::vector<Problem>& problems,
                      const std::map<std::string, std::vector<AnswerVerdict>>& verdicts,
                      const TableOptions& options);

}  // namespace dice::eval
