// dice-eval's driver: one evaluation from the command line to the table.
//
//   1. the problem set (problem_set.h) and the checkpoint folder are read and checked;
//   2. the machine is probed (environment.h) and the base config loaded with the user's
//      overrides: the reward mode follows (full needs a GPU; without one the mode says that no
//      number means a correct kernel), and what cannot work here is refused before anything runs;
//   3. OUT/evaluation.json pins the settings (plan.h): a rerun with the same ones resumes;
//   4. attempts (cluster_run.h) until every problem has a verdict for each answer: a run left up
//      by an interrupted dice-eval is followed first; each new attempt asks only for the problems
//      the reward log lacks (log_verdicts.h); an attempt that ends cleanly with problems still
//      unanswered is retried up to --retries times;
//   5. the table (eval_table.h) from the reward log: printed, written as OUT/table.{md,json,csv}
//      (table_writers.h) and into the reward log (log_summary.h).
#pragma once

#include <iosfwd>

#include "common/exit_codes.h"
#include "tools/dice-eval/cli.h"

namespace dice::eval {

// The exit status: kExitOk when the table was written, kExitFailure for a failure (rerun to
// resume), kExitBadInput for bad arguments, a bad problem set or config. Messages go to `err`,
// the progress and the table to `out`.
int run_evaluation(const EvalRequest& request, std::ostream& out, std::ostream& err);

}  // namespace dice::eval
