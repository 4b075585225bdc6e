#include "net/wire/verdict_identity.h"

namespace dice {

void set_verdict_identity(schema::EvalRequest::Reader request, const std::string& worker_id,
                          schema::Verdict::Builder verdict) {
  auto candidate = request.getCandidate();
  verdict.setWorkId(request.getWorkId());
  verdict.setRunId(candidate.getRunId());
  verdict.setStep(candidate.getStep());
  verdict.setTaskId(request.getTask().getId());
  verdict.setGroup(candidate.getGroup());
  verdict.setSampleIndex(candidate.getSampleIndex());
  verdict.setPolicyVersion(candidate.getPolicyVersion());
  verdict.setRewardWorker(worker_id);
}

}  // namespace dice
