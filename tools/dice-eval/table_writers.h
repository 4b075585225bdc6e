// The evaluation table (eval_table.h) as the three files dice-eval writes into its output folder
// (table.json, table.csv, table.md) and prints (the Markdown). Every form says how the numbers
// were made: the model, the problem set, the decoding, the reward mode and the noise check; a
// reward mode other than full is stated as "no number in this table means a correct kernel".
#pragma once

#include <string>
#include <vector>

#include "tools/dice-eval/eval_table.h"

namespace dice::eval {

// What the table was made from.
struct TableMeta {
  std::string evaluation_id;
  std::string model;         // rollout.model_path
  std::string problem_set;   // the --problems path
  std::string problem_form;  // problem_set.h's form
  std::string reward_mode;   // reward.mode: full, compile_only or extraction_only
  std::string decoding;      // e.g. "greedy (temperature 0, low_confidence_static, ...)"
  int samples = 1;           // answers per problem
  std::vector<int> pass_k;   // the pass@k columns
  double noise_z = kDefaultNoiseZ;
  double tolerance = 0.01;        // atol = rtol the answers were judged at (evaluation.cc)
  bool timing = true;             // correct answers were timed (fast_p > 0 possible)
  std::vector<std::string> runs;  // the reward log runs that hold the verdicts
  std::vector<std::string> weights_checksums;  // of the weights that sampled (hex); 1 expected
  std::string created_utc;                     // "2026-12-03T10:00:00Z"
};

// The level as the files write it: "none" for problems without one.
std::string level_label(const std::string& level);

// What the rates mean: DICE's and KernelBench's semantics (libraries allowed, the tolerance) for
// the main columns, and the "own kernels only" columns beside them (eval_table.h).
std::string judging_rule(const TableMeta& meta);

// The sentence every form carries when reward_mode is not full; "" for full.
std::string reward_mode_warning(const std::string& reward_mode);

// One JSON object: the meta fields and "rows" (fractions in [0, 1]), pretty-printed.
std::string table_json(const TableMeta& meta, const EvalTable& table);

// RFC 4180 with CRLF line ends (as dice-log's CSV): a header row, then one row per table row;
// rates as fractions in [0, 1]; the reward mode in every row.
std::string table_csv(const TableMeta& meta, const EvalTable& table);

// The paper's table: a heading, what it was made from, the reward-mode warning where it
// applies, one line per row (rates in percent), then the rules and any caveats.
std::string table_markdown(const TableMeta& meta, const EvalTable& table);

}  // namespace dice::eval
