// Evaluation of one compiled candidate: python/evaluate.py in a fresh sandboxed process (one per
// candidate: a CUDA error poisons a process's context), its result line parsed back.
//
// evaluate.py starts with --job-from-stdin: it imports torch, creates the CUDA context, prints
// "DICE_EVAL_READY" and then reads its arguments from stdin. With an EvaluatorPrestart per GPU
// slot, the process for a slot's next candidate does all that while the current one runs, so a
// candidate's evaluation starts from a warm interpreter; it is still a fresh process of its own.
//
// The result line is "DICE_EVAL_RESULT <nonce> <json>": the nonce is a random token written to a
// file that evaluate.py deletes before it loads candidate code, so output the candidate prints
// cannot pass for a result. No result line: the process died (crashed, timed out, hit a
// limit), classified from how it ended.
#pragma once

#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common/status.h"
#include "reward/compile.h"
#include "reward/gpu_turns.h"
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
  // The kernel-ran check (reward_options.h). Default: auto (the probe where this build has it)
  KernelCheck kernel_check = KernelCheck::kAuto;
  // dice_launch_probe.so for KernelCheck::kCupti. Default: this build's ("" without CUPTI)
  std::string launch_probe = DICE_LAUNCH_PROBE_PATH;
  // With timing.enabled: the turns at this evaluation's GPU (one GpuTurns per GPU, shared by the
  // evaluations of its slots): a shared turn while the candidate is checked, the GPU alone while
  // it is timed (timing.exclusive). Null: no turns. Default: null
  GpuTurns* gpu_turns = nullptr;
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

// Evaluation processes kept started ahead (`ahead` of them), for one GPU slot (or shared by the
// threads of a worker without slots). Thread-safe. With one ahead, a slot whose evaluations are
// shorter than a process's start (torch, CUDA context, the profiler's first session: 13 s median
// with 16 starting at once on the H200) waits for the start; more ahead hide it.
class EvaluatorPrestart {
 public:
  explicit EvaluatorPrestart(int ahead = 1);
  ~EvaluatorPrestart();
  // A started process for `spec`: the oldest started ahead when they have the same command,
  // environment and limits (the timeout aside, which applies at SandboxProcess::wait), else a
  // new one. Then starts new ones until `ahead` are ready again.
  Result<std::unique_ptr<SandboxProcess>> take(const SandboxSpec& spec);
  // Taken processes that had been started ahead (for logs and tests).
  int warm_takes() const;
  // Processes started ahead and not yet taken.
  int ready() const;

 private:
  const int ahead_;
  mutable std::mutex mutex_;
  std::string ready_key_;
  std::deque<std::unique_ptr<SandboxProcess>> ready_;
  int warm_takes_ = 0;
};

// OK when `check` can run in this build: kCupti needs the launch probe (DICE_LAUNCH_PROBE_PATH).
Status kernel_check_available(KernelCheck check, const std::string& launch_probe);

// The check an evaluation runs: kAuto becomes kCupti where `launch_probe` (this build's probe,
// "" without CUPTI) exists, else kProfiler; the others stay as asked.
KernelCheck resolve_kernel_check(KernelCheck check, const std::string& launch_probe);

// FailureClass from its schema name ("runtimeError" -> RUNTIME_ERROR); INTERNAL_ERROR for
// names that are not in the schema.
schema::FailureClass failure_class_from_name(const std::string& name);

// Runs evaluate.py on one candidate. `modules` are the successful builds of its extensions;
// `kernels` the __global__ names the profiler must see (from the static check). With
// `prestart`, the process comes from it (and its successor starts); else one starts now.
Result<EvaluationReport> evaluate_candidate(const std::string& reference_source,
                                            const std::string& candidate_source,
                                            const std::vector<CompileOutcome>& modules,
                                            const std::vector<std::string>& kernels,
                                            const EvaluatorOptions& options,
                                            EvaluatorPrestart* prestart = nullptr);

// The report from a finished evaluate.py process (exposed for tests).
EvaluationReport report_from_run(const SandboxResult& run, const std::string& nonce);

}  // namespace dice
