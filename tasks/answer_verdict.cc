#include "tasks/answer_verdict.h"

namespace dice::eval {

AnswerVerdict answer_of(schema::Verdict::Reader v) {
  AnswerVerdict a;
  a.judged = true;
  a.compiled = v.getCompiled();
  a.correct = v.getCorrect();
  a.rewarded = v.getReward() > 0;
  a.speedup = v.getSpeedup();
  auto t = v.getTimings();
  a.kernel_ms_mean = t.getKernelMsMean();
  a.kernel_ms_std = t.getKernelMsStd();
  a.reference_ms_mean = t.getReferenceMsMean();
  a.reference_ms_std = t.getReferenceMsStd();
  a.timing_trials = static_cast<int>(t.getTimingTrials());
  return a;
}

}  // namespace dice::eval
