// Which judged pairs dice-data build-sft keeps: a pair goes into the SFT file only when its
// candidate is correct and faster than eager PyTorch by at least min_speedup, judged on the
// noise-checked lower bound of the speedup (tasks/answer_scoring.h, the rule dice-eval's
// fast_p uses), never on the raw ratio of means: a tiny kernel whose timings spread widely
// (launch overhead, a busy GPU) shows a large raw speedup that the bound does not confirm.
//
// Each pair gets one outcome, its class in the report:
//   kept        correct, timed, speedup_lower_bound >= min_speedup
//   noisy       correct, timed, raw speedup >= min_speedup but the bound below it
//   slow        correct, timed, raw speedup below min_speedup
//   untimed     correct, but no speedup with at least 2 timed trials (the noise is unbounded)
//   zeroReward  correct, but a fatal finding zeroed its reward
//   <failure>   not correct: the verdict's failure class (compileError, incorrect, staticCheck...)
//   unmeasured  only screened without a GPU (extraction_only): no failure found, nothing run
//   duplicate   the same pair as an earlier one once normalised (source_norm.h): not judged
#pragma once

#include <string>
#include <string_view>

#include "common/status.h"
#include "tasks/answer_scoring.h"

namespace dice::data {

// One verdict line (reward/judge/judge.h's format, as dice-judge writes it) as the rule reads it.
struct PairVerdict {
  std::string id;
  std::string failure = "none";  // "none" or the failure class, as judge.h names it
  double reward = 0;
  bool fatal_finding = false;  // some finding has "fatal": true
  // A finding "reward-mode": the verdict comes from a screen (compile_only, extraction_only) and
  // says nothing about correctness or speed.
  bool screened = false;
  std::string pair_hash;       // build-sft's "pair_hash" member; "" in a line without it
  eval::AnswerVerdict answer;  // compiled, correct, speedup and its timings
};

// The verdict in `line` (one JSON object), read from `where` (file:line, for messages).
// InvalidArgument naming `where` for text that is not a JSON object or has no "id".
Result<PairVerdict> parse_pair_verdict(std::string_view line, const std::string& where);

struct KeepRule {
  double min_speedup = 2.0;               // kept at or above this noise-checked speedup
  double noise_z = eval::kDefaultNoiseZ;  // z of the one-sided lower bound (scoring.h)
};

struct Decision {
  std::string outcome;     // one of the classes above
  bool kept = false;       // outcome == "kept"
  bool timed = false;      // correct with a speedup: the report's histogram counts it
  double speedup = 0;      // the raw speedup (reference mean / kernel mean); 0 untimed
  double speedup_low = 0;  // eval::speedup_lower_bound at the rule's z; 0 when unbounded
};

// The outcome of a judged pair (every class above but duplicate).
Decision decide(const PairVerdict& verdict, const KeepRule& rule);

}  // namespace dice::data
