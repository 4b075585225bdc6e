// A step's verdicts the reward service could not reach, as its StepRecord holds them
// (schemas/rewardlog.capnp: numInternalErrors, internalErrorShare), and the share above which
// every reader (the learner's step line, dice-log, dice-dash) raises an alert: internalError and
// sandboxUnavailable are faults of ours, so a step with more than a few says the reward service,
// not the policy, is what failed.
#pragma once

#include <cstdint>

#include "schemas/rewardlog.capnp.h"

namespace dice::rewardlog {

// Share of a step's verdicts above which a reader alerts: more than 20 of DICE's 1,024 candidates
// a step (issue 50's threshold). Every one is a bug of ours; a few are noise the retry did not
// absorb, more say a worker or its GPU is broken.
inline constexpr double kInternalErrorAlertShare = 0.02;

struct StepInternalErrors {
  std::uint32_t count = 0;  // numInternalErrors; 0 in logs written before the field
  double share = 0.0;       // NaN: no verdict, or a log written before the field (not measured)
};

StepInternalErrors step_internal_errors(schema::StepRecord::Reader step);
void set_step_internal_errors(const StepInternalErrors& errors, schema::StepRecord::Builder step);

// Whether `share` is above kInternalErrorAlertShare (never for NaN: not measured).
bool internal_error_alert(double share);

}  // namespace dice::rewardlog
