// Evaluation of one compiled candidate: python/evaluate.py in a fresh sandboxed process (one per
// candidate: a CUDA error poisons a process's context), its result line parsed back.
//
// The result line is "DICE_EVAL_RESULT <nonce> <json>": the nonce is a random token written to a
// file that evaluate.py deletes before it loads candidate code, so output the candidate prints
// cannot pass for a result. No result line: the process died (crashed, timed out, hit a
// limit), classified from how it ended.
#pragma once

#include <string>
#include <vector>

#include "common/status.h"
#include "reward/compile.h"
#include "reward/reward_options.h"
#include "reward/sandbox.h"
#include "reward/static_check.h"
#include "schemas/verdict.capnp.h"

namespace dice {

struct EvaluatorOptions {
  // Python with torch and CUDA. Default: python3
  std::string python = "python3";
  // Folder of evaluate.py. Default: the source tree's reward/python
  std::string script_dir = DICE_REWARD_PYTHON_DIR;
  // "cuda" (CUDA_VISIBLE_DEVICES picks the slot's GPU) or "cpu" for tests. Default: cuda
  std::string device = "cuda";
  // Correctness trials, each on fresh seeded inputs. Default: 1
  int trials = 1;
  ToleranceOptions tolerance;
  TimingOptions timing;
  // Seed before constructing Model and ModelNew; trial t uses seed + t. Default: 42
  int seed = 42;
  // Peak memory bandwidth for the physical-bound check, GB/s. Default: 4800 (H200)
  double peak_gbps = 4800;
  // Limits of the evaluation process (timeout, memory...). Default: SandboxSpec defaults
  SandboxSpec sandbox;
};

struct EvaluationReport {
  schema::FailureClass failure = schema::FailureClass::INTERNAL_ERROR;
  std::string detail;
  bool correct = false;
  int trials = 0;
  double max_abs_error = 0;
  std::vector<StaticFinding> findings;  // dynamic anti-cheat findings (line 0)
  double kernel_ms_mean = 0, kernel_ms_std = 0;
  double reference_ms_mean = 0, reference_ms_std = 0;
  int timing_trials = 0;
  double speedup = 0;
  double eval_seconds = 0;  // wall clock of the sandboxed process
  std::string phases;       // evaluate.py's seconds per phase, "import=2.1 load=0.4 ...", for logs
  std::string log_tail;     // the end of the process's stderr, for failures
};

// FailureClass from its schema name ("runtimeError" -> RUNTIME_ERROR); INTERNAL_ERROR for
// names that are not in the schema.
schema::FailureClass failure_class_from_name(const std::string& name);

// Runs evaluate.py on one candidate. `modules` are the successful builds of its extensions;
// `kernels` the __global__ names the profiler must see (from the static check).
Result<EvaluationReport> evaluate_candidate(const std::string& reference_source,
                                            const std::string& candidate_source,
                                            const std::vector<CompileOutcome>& modules,
                                            const std::vector<std::string>& kernels,
                                            const EvaluatorOptions& options);

// The report from a finished evaluate.py process (exposed for tests).
EvaluationReport report_from_run(const SandboxResult& run, const std::string& nonce);

}  // namespace dice
