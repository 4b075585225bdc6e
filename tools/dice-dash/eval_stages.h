// The evaluation phases of a run as the dashboard's first table: per phase, the steps it ran,
// the policy version it judged, the split and kind its name says, and the learner's own table
// for all its tasks (the eval/<phase>/<measure> metrics learner/run/run_loop.cc's report_evaluation
// writes at the phase's last step: exec, fast_1, fast_2, tasks). dice-dash shows those numbers;
// it does not recompute them. Intervals are tools/learning-report's (the log holds none).
#pragma once

#include <boost/json.hpp>
#include <string>
#include <vector>

#include "rewardlog/reader.h"

namespace dice::dash {

// The word of `phase_name` (split at '-') that is one of `words`, or "" when none is:
// "eval-sft-ood-e2e" says split "ood" and kind "e2e", as tools/learning-report reads it.
std::string name_says(const std::string& phase_name, const std::vector<std::string>& words);

// [{"phase", "first_step", "last_step", "policy_version", "split", "kind", "tasks", "exec",
//   "fast_1", "fast_2"}], one per run of consecutive evaluation steps of one phase name, in
// step order; split and kind null where the name says none, the measures null where the log
// has no such metric within the phase's steps (a phase still running, or a log from before).
boost::json::array eval_stages(
    const std::vector<rewardlog::OwnedRecord<schema::StepRecord>>& steps,
    const std::vector<rewardlog::OwnedRecord<schema::MetricRecord>>& metrics);

}  // namespace dice::dash
