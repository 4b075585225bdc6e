// The status line dice-eval prints while an attempt runs (every --status-interval seconds, from
// the reward log read as a secondary): a bar, answers judged of those asked, problems done over
// the whole evaluation, the correct count (or, in reward modes that judge no correctness, the
// rewarded count, named as such), the rate and the ETA at that rate.
#pragma once

#include <string>

namespace dice::eval {

struct Progress {
  std::string run_id;      // the attempt's run
  int total_problems = 0;  // in the evaluation
  int done_before = 0;     // problems complete before this attempt
  int samples = 1;         // answers per problem
  int asked_answers = 0;   // this attempt: its problems x samples
  int judged_answers = 0;  // verdicts of this attempt so far
  int correct = 0;
  int rewarded = 0;
  double seconds = 0;       // since the attempt started
  std::string reward_mode;  // "full" counts correct; others count rewarded
};

// "1h02m", "4m05s", "12s"; "-" for a negative or non-finite value.
std::string format_duration(double seconds);

// e.g. "[######--------------] 12/40 answers (30%) | 47/75 problems done | 3 correct |
// 2.4 answers/min | ETA 11m40s | run eval-1a2b-a2".
std::string progress_line(const Progress& progress);

}  // namespace dice::eval
