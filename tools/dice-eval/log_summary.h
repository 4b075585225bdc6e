// The evaluation table into the reward log, beside the verdicts it was made from: run
// <evaluation id> (its attempts are <id>-a<N>, log_verdicts.h) gets a RunRecord whose note says
// what the table is of (model, problem set, attempt runs, reward mode) and one MetricRecord per
// cell at step 0, named as the learner names an eval phase's table:
//
//   eval/<kind>/level_<L>/<measure>   a row (level_none for problems without a level)
//   eval/<kind>/<measure>             the kind's "all" row
//
// <kind> is end_to_end or infill; <measure> is exec, fast_0, fast_1, fast_2, fast_1_raw,
// fast_2_raw, geo_mean_speedup, tasks, timed, compiled, rewarded, incomplete and pass_at_<k>. So
// `dice-log metrics LOG <id>` and tools/learning-report --run <id> show the table. Written again
// on every run of dice-eval that completes the table (the same keys: the latest table wins).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "common/status.h"
#include "tools/dice-eval/table_writers.h"

namespace dice::eval {

// (metric name, value) of every cell, rows in table order.
std::vector<std::pair<std::string, double>> table_metrics(const TableMeta& meta,
                                                          const EvalTable& table);

// OK when `run_id` is not in the log at `log_path` (or there is no log yet), or is a table
// dice-eval wrote; InvalidArgument naming it otherwise (a learner's run is never overwritten).
Status check_table_run_id(const std::string& log_path, const std::string& run_id);

// The RunRecord's note.
std::string summary_note(const TableMeta& meta);

// Appends the RunRecord (with `config_yaml`, the resolved config of the attempts) and the
// metrics to the log at `log_path` in one batch. InvalidArgument when the log holds a run of
// that id that is not a dice-eval table (a learner's run: never overwritten); Unavailable while
// another process writes the log; IOError/InvalidArgument from the writer.
Status write_table_to_log(const std::string& log_path, const TableMeta& meta,
                          const EvalTable& table, const std::string& config_yaml);

}  // namespace dice::eval
