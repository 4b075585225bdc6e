// Static anti-cheat checks (REFERENCE.md section 5) on a candidate file: python/static_check.py
// parses it with Python's ast module, inside the sandbox, and prints JSON that is read here.
// The rules and their stable names are documented at the top of static_check.py.
#pragma once

#include <string>
#include <vector>

#include "common/status.h"
#include "reward/sandbox/sandbox.h"
#include "schemas/verdict.capnp.h"

namespace dice {

struct StaticFinding {
  std::string check;   // stable rule name, e.g. "torch-op-in-forward"
  std::string detail;  // "line 42: torch.matmul in ModelNew.forward"
  bool fatal = true;
  int line = 0;
};

struct StaticCheckResult {
  bool syntax_error = false;
  std::vector<StaticFinding> findings;
  std::vector<std::string> kernels;   // names of the __global__ functions
  std::vector<std::string> launched;  // names launched with <<<...>>>
  std::string extension;              // the name bound to load_inline(...), if any

  bool has_fatal() const;
  // syntaxError, staticCheck (some finding is fatal) or NONE.
  schema::FailureClass failure() const;
  // One line per finding, for a verdict's log excerpt.
  std::string summary() const;
};

struct StaticCheckOptions {
  // Python 3 (standard library only is needed). Default: python3
  std::string python = "python3";
  // Folder holding static_check.py. Default: the source tree's reward/python
  std::string script_dir = DICE_REWARD_PYTHON_DIR;
  // Rules reported but not fatal, e.g. {"try-except-fallback"}. Default: none
  std::vector<std::string> nonfatal;
  // Limits of the checking process (timeout, memory...). Default: SandboxSpec defaults with a
  // 30 s timeout and 2 GiB of memory
  SandboxSpec sandbox = [] {
    SandboxSpec s;
    s.timeout_seconds = 30;
    s.memory_limit_mb = 2048;
    return s;
  }();
};

// Errors when the checker itself fails (no python, a crash, output that is not JSON): that is
// an internal error of the reward service, not a verdict on the candidate.
Result<StaticCheckResult> run_static_check(const std::string& source,
                                           const StaticCheckOptions& options);

// Parses static_check.py's JSON output (exposed for tests).
Result<StaticCheckResult> parse_static_check_output(const std::string& json);

}  // namespace dice
