#include "rewardlog/step_internal_errors.h"

namespace dice::rewardlog {

StepInternalErrors step_internal_errors(schema::StepRecord::Reader step) {
  return StepInternalErrors{step.getNumInternalErrors(), step.getInternalErrorShare()};
}

void set_step_internal_errors(const StepInternalErrors& errors, schema::StepRecord::Builder step) {
  step.setNumInternalErrors(errors.count);
  step.setInternalErrorShare(static_cast<float>(errors.share));
}

bool internal_error_alert(double share) {
  return share > kInternalErrorAlertShare;  // false for NaN
}

}  // namespace dice::rewardlog
