// A candidate's denoising trace as /api/candidate returns it: its unmask steps and its response
// cut into the trace's tokens, each with the step that unmasked it, so the page can shade the
// text by step without a tokenizer (schemas/rewardlog.capnp: CandidateRecord.tokenTextEnds).
#pragma once

#include <boost/json.hpp>

#include "schemas/rewardlog.capnp.h"

namespace dice::dash {

// {"unmask_steps": [..], "num_steps": N (1 + the largest step; 0 without a trace),
//  "tokens": [{"text": T, "step": S}] or null, "note": why a part is missing (absent when none)}.
// An offset inside a UTF-8 character (two tokens sharing one) moves to the character's end, so
// every piece is whole UTF-8; text after the last offset comes as one piece with step null.
boost::json::object trace_json(schema::CandidateRecord::Reader record);

}  // namespace dice::dash
