#include "reward/evaluation_retry.h"

#include "common/log.h"
#include "net/wire/enum_name.h"

namespace dice {
namespace {

using FC = schema::FailureClass;

// The first evaluation's fault as Verdict.retriedAfter says it, kept short: the verdict's own
// excerpt is the second evaluation's.
std::string describe_fault(const std::string& slot, const Result<EvaluationReport>& report) {
  std::string detail = report.ok() ? report->detail : report.status().to_string();
  if (detail.size() > 500) detail = detail.substr(0, 500) + "...";
  return "slot " + (slot.empty() ? std::string("(none)") : slot) + ": " +
         wire::enum_name(evaluation_failure(report)) + (detail.empty() ? "" : ": " + detail);
}

}  // namespace

bool retry_evaluation(FC failure) {
  return failure == FC::INTERNAL_ERROR || failure == FC::SANDBOX_UNAVAILABLE;
}

FC evaluation_failure(const Result<EvaluationReport>& report) {
  return report.ok() ? report->failure : FC::INTERNAL_ERROR;
}

RetriedEvaluation evaluate_with_one_retry(GpuSlotPool& slots, Cancellation* cancellation,
                                          const EvaluationAttempt& attempt) {
  RetriedEvaluation out;
  {
    SlotLease lease(slots, "", cancellation);
    if (!lease.held()) {
      out.report = Status::aborted("cancelled by the learner while it waited for a GPU slot");
      return out;
    }
    out.slot = lease.slot();
    out.report = attempt(out.slot);
  }
  if (!retry_evaluation(evaluation_failure(out.report))) return out;
  if (cancellation != nullptr && cancellation->cancelled()) return out;
  out.retried_after = describe_fault(out.slot, out.report);
  SlotLease lease(slots, out.slot, cancellation);
  if (!lease.held()) return out;  // cancelled while it waited: the first evaluation's report
  DICE_LOG(Warn) << "evaluation failed by the reward service: evaluating once more"
                 << kv("first", out.retried_after) << kv("slot", lease.slot());
  out.slot = lease.slot();
  out.report = attempt(out.slot);
  return out;
}

}  // namespace dice
