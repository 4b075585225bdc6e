// How a sandboxed run's end reads as a verdict's failure class: the sandbox (reward/sandbox/) runs
// processes and knows nothing of candidates, so the reward service (compile_log, the evaluator)
// classifies what happened here.
#pragma once

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

}  // namespace dice
