// An answer's verdict as the table reads it (answer_scoring.h: AnswerVerdict), from the Verdict
// message off the wire or out of the reward log. Apart from answer_scoring.h so that the rule
// itself needs no generated schema headers.
#pragma once

#include "schemas/verdict.capnp.h"
#include "tasks/answer_scoring.h"

namespace dice::eval {

// judged: true; the rest copied from the verdict and its timings.
AnswerVerdict answer_of(schema::Verdict::Reader verdict);

}  // namespace dice::eval
