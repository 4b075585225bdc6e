// Who and what a verdict is about, copied from the evaluation request it answers: the learner
// checks the task, and the reward log files the verdict under the candidate's step, group and
// sample. Used by the reward pipeline for judged verdicts and by the dispatcher for the verdicts
// it gives itself (net/transport/lost_work_answer.h).
#pragma once

#include <string>

#include "schemas/verdict.capnp.h"

namespace dice {

// Work id, run, step, task, group, sample and policy version from `request`; `worker_id` as the
// worker that judged it.
void set_verdict_identity(schema::EvalRequest::Reader request, const std::string& worker_id,
                          schema::Verdict::Builder verdict);

}  // namespace dice
