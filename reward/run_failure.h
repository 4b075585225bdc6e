// How a sandboxed run's end reads as a verdict's failure class: the sandbox (reward/sandbox/) runs
// processes and knows nothing of candidates, so the reward service (compile_log, the evaluator)
// classifies what happened here.
#pragma once

#include <string>

#include "reward/sandbox/sandbox.h"
#include "schemas/verdict.capnp.h"

namespace dice {

// The failure class of an unsuccessful run, from what the OS and the child's stderr tell:
// sandboxUnavailable (a layer could not be set up; the command did not run); timeout; resourceLimit
// (SIGXCPU, SIGXFSZ, SIGKILL without our timeout, MemoryError, bad_alloc, "Resource temporarily
// unavailable" from fork); sandboxViolation (network unreachable, permission denied / read-only
// file system on a write); crashed (any other signal); internalError when the sandbox itself could
// not start the command; NONE when none of these applies (a plain non-zero exit is the caller's to
// interpret).
schema::FailureClass classify_sandbox_failure(const SandboxResult& result);

// How the detail of the judge's verdict starts when the runner (the candidate's process) ended
// during a request (RUNNER_ENDED in reward/python/judge.py); that verdict is `crashed`.
inline constexpr const char* kRunnerEnded = "the runner ended";

// The failure class of a verdict the judge reached (`judged`, with its detail), given how its
// runner ended: a `crashed` verdict for a runner that ended during a request is the candidate's
// timeout when the runner ran past its time limit (an endless kernel: the runner's limit and the
// judge's are the same, and the runner's wait starts first), and its resourceLimit when the
// sandbox's classification of the runner's end says a limit ended it (SIGXCPU, SIGXFSZ, out of
// memory or processes in its stderr). A SIGKILL does not count: the
// evaluator kills every runner once its judge is done, so one cannot be told from the OOM
// killer's. Any other verdict is kept.
schema::FailureClass runner_end_failure(schema::FailureClass judged, const std::string& detail,
                                        const SandboxResult& runner);

}  // namespace dice
