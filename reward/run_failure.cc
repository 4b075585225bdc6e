#include "reward/run_failure.h"

#include <csignal>
#include <string>

namespace dice {
namespace {

bool contains(const std::string& text, const char* needle) {
  return text.find(needle) != std::string::npos;
}

}  // namespace

schema::FailureClass classify_sandbox_failure(const SandboxResult& r) {
  using FC = schema::FailureClass;
  // A layer of the sandbox could not be set up: the command never ran.
  if (r.unavailable) return FC::SANDBOX_UNAVAILABLE;
  if (r.timed_out) return FC::TIMEOUT;
  const std::string& e = r.stderr_text;
  // The sandbox's own setup failed (see child_main): not the candidate's doing.
  if ((r.exit_code == 126 || r.exit_code == 127) && e.rfind("sandbox: ", 0) == 0) {
    return FC::INTERNAL_ERROR;
  }
  if (r.signal == SIGXCPU || r.signal == SIGXFSZ) return FC::RESOURCE_LIMIT;
  // Killed without our timeout: the OOM killer or the hard CPU limit.
  if (r.signal == SIGKILL) return FC::RESOURCE_LIMIT;
  if (contains(e, "MemoryError") || contains(e, "std::bad_alloc") ||
      contains(e, "Cannot allocate memory") || contains(e, "Resource temporarily unavailable") ||
      contains(e, "File too large") || contains(e, "Too many open files")) {
    return FC::RESOURCE_LIMIT;
  }
  if (contains(e, "Network is unreachable") || contains(e, "Cannot assign requested address") ||
      contains(e, "Temporary failure in name resolution") || contains(e, "Read-only file system") ||
      contains(e, "Permission denied") || contains(e, "Operation not permitted")) {
    return FC::SANDBOX_VIOLATION;
  }
  if (r.signal != 0) return FC::CRASHED;
  return FC::NONE;
}

schema::FailureClass runner_end_failure(schema::FailureClass judged, const std::string& detail,
                                        const SandboxResult& runner) {
  using FC = schema::FailureClass;
  if (judged != FC::CRASHED || detail.rfind(kRunnerEnded, 0) != 0) return judged;
  // The runner's own time limit ended it: the judge, waiting on the same limit, saw the end first.
  if (runner.timed_out) return FC::TIMEOUT;
  if (runner.signal != SIGKILL && classify_sandbox_failure(runner) == FC::RESOURCE_LIMIT) {
    return FC::RESOURCE_LIMIT;
  }
  return judged;
}

}  // namespace dice
