#include "tools/dice-data/keep_rule.h"

#include <boost/json.hpp>

#include "common/json/fields.h"

namespace dice::data {

Result<PairVerdict> parse_pair_verdict(std::string_view line, const std::string& where) {
  DICE_ASSIGN_OR_RETURN(const boost::json::value value, parse_json(line, where));
  if (!value.is_object()) return Status::invalid_argument(where + ": not a verdict object");
  PairVerdict v;
  v.id = json_id(value);
  if (v.id.empty()) return Status::invalid_argument(where + ": not a verdict with an \"id\"");
  v.failure = json_string(value, "failure", "none");
  v.reward = json_number(value, "reward");
  v.pair_hash = json_string(value, "pair_hash");
  if (const boost::json::value* findings = json_member(value, "findings");
      findings != nullptr && findings->is_array()) {
    for (const boost::json::value& f : findings->get_array()) {
      v.fatal_finding = v.fatal_finding || json_bool(f, "fatal");
      v.screened = v.screened || json_string(f, "check") == "reward-mode";
    }
  }
  eval::AnswerVerdict& a = v.answer;
  a.judged = true;
  a.compiled = json_bool(value, "compiled");
  a.correct = json_bool(value, "correct");
  a.rewarded = v.reward > 0;
  a.speedup = json_number(value, "speedup");  // null (untimed) reads as 0
  a.kernel_ms_mean = json_number(value, "kernel_ms");
  a.kernel_ms_std = json_number(value, "kernel_ms_std");
  a.reference_ms_mean = json_number(value, "reference_ms");
  a.reference_ms_std = json_number(value, "reference_ms_std");
  a.timing_trials = static_cast<int>(json_number(value, "timing_trials"));
  return v;
}

Decision decide(const PairVerdict& verdict, const KeepRule& rule) {
  Decision d;
  const eval::AnswerVerdict& a = verdict.answer;
  if (!a.correct) {
    const bool failed = !verdict.failure.empty() && verdict.failure != "none";
    d.outcome = failed ? verdict.failure : verdict.screened ? "unmeasured" : "incorrect";
    return d;
  }
  if (verdict.fatal_finding || !a.rewarded) {
    d.outcome = "zeroReward";
    return d;
  }
  d.speedup = a.speedup > 0 ? a.speedup : 0;
  d.timed = d.speedup > 0;
  if (!d.timed || a.timing_trials < 2) {
    d.outcome = "untimed";
    return d;
  }
  d.speedup_low = eval::speedup_lower_bound(a, rule.noise_z);
  d.kept = d.speedup_low >= rule.min_speedup;
  d.outcome = d.kept ? "kept" : d.speedup >= rule.min_speedup ? "noisy" : "slow";
  return d;
}

}  // namespace dice::data
