// The answer the dispatcher gives itself for a work item it stops sending: its worker was lost on
// every dispatch (DispatcherOptions::max_attempts), e.g. a candidate that kills the reward worker
// judging it. Without it such an item would go to each worker in turn until the role is spent.
#pragma once

#include <cstdint>
#include <string>

#include "net/wire/envelope.h"

namespace dice::transport {

// For an EvalRequest: a Verdict of class workerLost (compiled and correct false, reward 0) with
// the request's identity (run, step, task, group, sample, policy version) and `why` as its log
// excerpt, so the learner scores it as the candidate's failure and the reward log keeps it. For
// anything else (a RolloutRequest, a payload that does not decode): an Error naming `why`.
// `sender_id` and `run_id` stamp the envelope; `workers` goes to the Verdict's rewardWorker.
wire::Decoded<schema::Envelope> lost_work_answer(const std::string& payload, std::uint64_t work_id,
                                                 const std::string& sender_id,
                                                 const std::string& run_id,
                                                 const std::string& workers,
                                                 const std::string& why);

}  // namespace dice::transport
