// One more evaluation for a candidate whose first one the reward service itself failed.
//
// internalError and sandboxUnavailable are faults of ours (a judge that broke, a sandbox that
// could not be set up, a GPU in a bad state), not the candidate's: the candidate is evaluated
// once more on another GPU slot of the worker (one on another GPU when one is free; with a
// single slot, the same one after the evaluations already waiting for it) before its verdict
// goes out, and the verdict says so (Verdict.retriedAfter). What the second evaluation ends in
// is the verdict; the learner counts a service fault that remains as the candidate's failure
// (learner.internal_errors), so a fault is never a free pass. Failures the candidate caused
// (crashed, timeout, runtimeError, ...) are never retried: they are its verdict.
#pragma once

#include <functional>
#include <string>

#include "common/status.h"
#include "reward/evaluate/evaluator.h"
#include "reward/gpu_slot_pool.h"
#include "schemas/verdict.capnp.h"

namespace dice {

// The retry decision: whether an evaluation that ended in `failure` runs once more.
bool retry_evaluation(schema::FailureClass failure);

// The failure class of an evaluation's outcome: an error Status (the evaluator could not run it)
// is internalError.
schema::FailureClass evaluation_failure(const Result<EvaluationReport>& report);

// One evaluation of the candidate on `slot` ("" without GPU slots).
using EvaluationAttempt = std::function<Result<EvaluationReport>(const std::string& slot)>;

struct RetriedEvaluation {
  Result<EvaluationReport> report = Status::internal("not evaluated");  // the last evaluation's
  std::string slot;           // where the last evaluation ran
  std::string retried_after;  // empty: it ran once; else the first one's slot and fault
                              // ("slot 0/1: internalError: <detail>"), Verdict.retriedAfter
};

// Runs `attempt` on a slot of `slots` and, when retry_evaluation() says so, once more on another
// slot; each slot is given back as soon as its evaluation ends. Once `cancellation` (may be null)
// is set, nothing more: a wait for a slot ends (the report is then Aborted, with no slot), and a
// judging killed by the learner's cancel is not retried (no fault of the service, and nobody
// waits for its verdict).
RetriedEvaluation evaluate_with_one_retry(GpuSlotPool& slots, Cancellation* cancellation,
                                          const EvaluationAttempt& attempt);

}  // namespace dice
