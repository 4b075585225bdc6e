// dice-dash's JSON API: what each /api/... path answers, built from the reward logs of a LogSet.
// The page (web/dash.js) is its only client; tests read it too. All numbers that are not finite
// (a step without a policy update has NaN loss) are JSON null; 64-bit integers are JSON numbers
// (steps and versions stay far below 2^53). Columnar arrays (one per field, one entry per step)
// go straight into the charts.
//
//   GET /api/runs                                   every log's state and its runs
//   GET /api/run?log=L&run=R                         per-step series, rates, metrics of run R;
//                                                    "by_level": mean reward and correct rate
//                                                    per step for each "<phase> / level <L>";
//                                                    the steps' exploration readouts
//                                                    (mixed_group_share, distinct_text_share,
//                                                    rewardlog/step_exploration.h) and update
//                                                    readouts (kl, clip_fraction, grad_norm);
//                                                    internal_errors, internal_error_share and
//                                                    internal_error_alert (share above
//                                                    "internal_error_alert_above":
//                                                    rewardlog/step_internal_errors.h) per step;
//                                                    "stages": the evaluation phases with the
//                                                    learner's Exec, fast_1 (eval_stages.h)
//   GET /api/step?log=L&run=R&step=S                 the step's groups and their candidates
//   GET /api/candidate?log=L&run=R&step=S&task=T&sample=N
//                                                    one candidate: verdict, findings, response,
//                                                    evaluated file, compile logs; "trace": its
//                                                    unmask steps and the response cut into
//                                                    tokens ([{"text", "step"}]); "task": the
//                                                    TaskRecord (the PyTorch reference, level)
//
// Errors are {"error": message, "kind": K} with K one of bad_request (a missing or malformed
// parameter, naming it), missing (no log at the path, or no such run/step/candidate), corrupt (a
// damaged record, the message naming its key), unreadable (a folder that is not a reward log).
#pragma once

#include <boost/json.hpp>
#include <map>
#include <string>

#include "tools/dice-dash/log_set.h"
#include "tools/dice-dash/step_aggregate.h"

namespace dice::dash {

struct ApiResponse {
  int http_status = 200;
  boost::json::value body;
};

class Api {
 public:
  explicit Api(LogSet* logs) : logs_(logs) {}

  // `path` is the part of the target before '?'; `query` its decoded parameters.
  ApiResponse handle(const std::string& path, const std::map<std::string, std::string>& query);

 private:
  ApiResponse runs();
  ApiResponse run(const std::map<std::string, std::string>& query);
  ApiResponse step(const std::map<std::string, std::string>& query);
  ApiResponse candidate(const std::map<std::string, std::string>& query);

  LogSet* logs_;
  StepAggregateCache aggregates_;
};

// The fields of the wish list that this run's log does not record, each with why (a log
// written before TaskRecords has no levels or references); the page shows them where the data
// would be (listed in the run's JSON as "not_in_log").
boost::json::array fields_not_in_log(bool has_tasks);

}  // namespace dice::dash
