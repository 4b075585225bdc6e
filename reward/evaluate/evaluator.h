// Evaluation of one compiled candidate in two sandboxed processes (docs/SECURITY.md):
//   - the runner (python/runner.py) is the only process that loads candidate code: it builds
//     ModelNew and runs forward on what the judge sends;
//   - the judge (python/judge.py) runs the reference, compares, times, and writes the verdict.
// They share nothing but one SOCK_SEQPACKET channel made here and handed to each with its job;
// tensors cross it as plain bytes (python/channel.py). Only the judge's output is read for the
// result, so nothing the candidate prints or patches can become a verdict. Both are fresh
// processes per candidate (a CUDA error poisons a process's context).
//
// Both start with --job-from-stdin: they import torch, create the CUDA context, print
// "DICE_EVAL_READY" and then wait for their job. With an EvaluatorPrestart per GPU slot, the pair
// for a slot's next candidate does all that while the current one runs.
//
// The result line is "DICE_EVAL_RESULT <nonce> <json>" on the judge's stdout. No result line:
// the judge died (crashed, timed out, hit a limit), classified from how it ended.
#pragma once

#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common/cancellation.h"
#include "common/status.h"
#include "options/reward_options.h"
#include "reward/compile/compile.h"
#include "reward/evaluate/gpu_memory_watch.h"
#include "reward/evaluate/gpu_turns.h"
#include "reward/sandbox/sandbox.h"
#include "reward/static_check.h"
#include "schemas/verdict.capnp.h"

namespace dice {

struct EvaluatorOptions {
  // Python with torch and CUDA. Default: python3
  std::string python = "python3";
  // Folder of judge.py and runner.py. Default: the source tree's reward/python
  std::string script_dir = DICE_REWARD_PYTHON_DIR;
  // "cuda" (CUDA_VISIBLE_DEVICES picks the slot's GPU) or "cpu" for tests. Default: cuda
  std::string device = "cuda";
  // Correctness trials, each on fresh seeded inputs. Default: 3
  int trials = 3;
  ToleranceOptions tolerance;
  TimingOptions timing;
  // Seed of Model's and ModelNew's weights and of the inputs (drawn from it as KernelBench
  // draws them); -1 = fresh random seeds per evaluation, reported in its log. Default: -1
  int seed = -1;
  // Peak memory bandwidth for the physical-bound check, GB/s. Default: 4800 (H200)
  double peak_gbps = 4800;
  // Limits of the judge and runner processes (timeout, memory...). Default: SandboxSpec defaults
  SandboxSpec sandbox;
  // The kernel-ran check (reward_options.h). Default: auto (the probe where this build has it)
  KernelCheck kernel_check = KernelCheck::kAuto;
  // The reward policy's rule on library calls (reward.libraries, reward_options.h), passed to
  // the judge as --libraries. Default: own_kernels_only
  LibraryCalls libraries = LibraryCalls::kOwnKernelsOnly;
  // dice_launch_probe.so for KernelCheck::kCupti. Default: this build's ("" without CUPTI)
  std::string launch_probe = DICE_LAUNCH_PROBE_PATH;
  // dice_guard_alloc.so: guard bytes around every tensor of the candidate's process, required
  // on a GPU (python/guard_memory.py). Default: this build's
  std::string guard_alloc = DICE_GUARD_ALLOC_PATH;
  // With timing.enabled: the turns at this evaluation's GPU (one GpuTurns per GPU, shared by the
  // evaluations of its slots): a shared turn while the candidate is checked, the GPU alone while
  // it is timed (timing.exclusive). Null: no turns. Default: null
  GpuTurns* gpu_turns = nullptr;
  // false: this candidate is not timed (Task.wantTiming) although timing.enabled; it still shares
  // the GPU's turns, so that it never runs beside another's timing. Default: true
  bool timed = true;
  // With gpu_turns: an evaluation that had company at its GPU and ended in a failure a neighbour
  // can cause is judged again with the GPU alone, and that verdict stands
  // (reward.confirm_failures_alone). Default: true
  bool confirm_failures_alone = true;
  // GPU memory the candidate's processes may hold, MiB, as the driver accounts it, read from
  // outside them (gpu_memory_watch.h): over it the runner is killed and the verdict is
  // resourceLimit (reward.sandbox.gpu_memory_mb). 0 = half of this slot's share of its GPU
  // (default_gpu_memory_budget), -1 = no bound. Default: -1 (the pipeline sets the option's)
  std::int64_t gpu_memory_mb = -1;
  // Slots sharing this evaluation's GPU, for the bound's default. Default: 1
  int slots_on_gpu = 1;
  // The learner's cancel of the work item (worker_loop.h): once set, the judge and runner of a
  // judging in progress are killed at once, and no second judging (confirm_failures_alone)
  // starts. The report of a killed judging is then meaningless; the caller drops it. Null: not
  // cancellable. Default: null
  Cancellation* cancellation = nullptr;
  // Jobs one judge process takes, one after another, before it is replaced (judge.py
  // --serve-jobs; reward.judge_jobs). The judge runs no candidate code and puts back what a job
  // may change, so a reused judge judges as a fresh one; what it saves is the judge's start
  // (python, torch, the CUDA context), about a third of a candidate's CPU. Only judges that come
  // from an EvaluatorPrestart are reused. 1: a fresh judge for every candidate. Default: 1
  int judge_jobs = 1;
  // Where the bound reads the driver's account. Null: NVML, for runs with a GPU. Tests pass a
  // test double (then the runner's tree is watched on the CPU too). Default: null
  std::shared_ptr<GpuMemoryReader> gpu_memory_reader;
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
  double eval_seconds = 0;  // wall clock of the judge
  std::string phases;       // judge.py's seconds per phase, "import=2.1 load=0.4 ...", for logs
  std::string log_tail;     // the end of the runner's stderr (the candidate's output), then the
                            // judge's, for failures
  int judge_job = 0;        // this job's number in its judge's life: 1 for a fresh judge
  bool judge_serves_again = false;  // the judge said it takes another job (judge_jobs)
};

// Evaluation processes kept started ahead (`ahead` of each kind: judges and runners), for one GPU
// slot (or shared by the threads of a worker without slots). Thread-safe. With one ahead, a slot
// whose evaluations are shorter than a process's start (torch, CUDA context, the profiler's first
// session: 13 s median with 16 starting at once on the H200) waits for the start; more ahead hide
// it.
class EvaluatorPrestart {
 public:
  explicit EvaluatorPrestart(int ahead = 1);
  ~EvaluatorPrestart();
  // A started process for `spec`: one given back, else the oldest started ahead when they have
  // the same command, environment and limits (the timeout aside, which applies at
  // SandboxProcess::wait), else a new one. Then starts new ones until `ahead` are ready again,
  // counting those out that will come back. Processes of the two most recently taken specs are
  // kept (the judge's and the runner's). `comes_back`: the caller calls give_back once the
  // process is done with this work (a judge that serves job after another).
  Result<std::unique_ptr<SandboxProcess>> take(const SandboxSpec& spec, bool comes_back = false);
  // For a process taken with comes_back: ready for more work (it is taken before any started
  // ahead), or null: it does not come back, and a successor starts now.
  void give_back(const SandboxSpec& spec, std::unique_ptr<SandboxProcess> process);
  // Taken processes that had been started ahead or given back (for logs and tests).
  int warm_takes() const;
  // Processes given back ready for more work (for logs and tests).
  int given_back() const;
  // Processes started ahead and not yet taken, of every spec.
  int ready() const;

 private:
  struct Ready {
    std::string key;
    std::deque<std::unique_ptr<SandboxProcess>> processes;
    int out = 0;  // taken with comes_back, not yet given back
  };
  // Starts processes of `key` until `ahead_` are ready or out.
  void start_successors(const SandboxSpec& spec, const std::string& key);
  const int ahead_;
  mutable std::mutex mutex_;
  std::deque<Ready> ready_;  // most recently taken spec first; at most two
  int warm_takes_ = 0;
  int given_back_ = 0;
};

// OK when `check` can run in this build: kCupti needs the launch probe (DICE_LAUNCH_PROBE_PATH).
Status kernel_check_available(KernelCheck check, const std::string& launch_probe);

// The check an evaluation runs: kAuto becomes kCupti where `launch_probe` (this build's probe,
// "" without CUPTI) exists, else kProfiler; the others stay as asked.
KernelCheck resolve_kernel_check(KernelCheck check, const std::string& launch_probe);

// FailureClass from its schema name ("runtimeError" -> RUNTIME_ERROR); INTERNAL_ERROR for
// names that are not in the schema.
schema::FailureClass failure_class_from_name(const std::string& name);
// The schema's name of a failure class ("runtimeError"); "unknown" for a number it lacks.
std::string failure_class_name(schema::FailureClass failure);
// Failures another evaluation at the same GPU can cause (its memory, its endless kernel, a kill):
// runtimeError, importError, crashed, timeout and resourceLimit. The rest the candidate's own
// code and outputs decide.
bool a_neighbour_can_cause(schema::FailureClass failure);

// What one evaluation judges.
struct EvaluationJob {
  std::string reference_source;             // the task's PyTorch reference
  std::vector<std::string> shape_variants;  // the task's other shapes, "batch_size=3,dim=9"
                                            // each (shape_variant_args, tasks/)
  std::string candidate_source;             // the candidate's Python file
  std::vector<CompileOutcome> modules;      // the successful builds of its extensions
  std::vector<std::string> kernels;         // its __global__ names (from the static check)
};

// Judges one candidate: its runner and judge, joined by their channel. With `prestart`, the
// processes come from it (and their successors start); else they start now. A failure that a
// neighbour at the GPU can cause, met with company, is judged again with the GPU alone
// (EvaluatorOptions::confirm_failures_alone).
Result<EvaluationReport> evaluate_candidate(const EvaluationJob& job,
                                            const EvaluatorOptions& options,
                                            EvaluatorPrestart* prestart = nullptr);

// The judge's command-line arguments for `job` (python/judge.py's usage); each built module
// they name is read and added to `runner_files` under the name the arguments give it. With
// `take_turns`, the judge asks for the GPU alone before it times. (Exposed for tests.)
Status judge_arguments(const EvaluationJob& job, const EvaluatorOptions& options, bool take_turns,
                       std::vector<std::pair<std::string, std::string>>* runner_files,
                       std::vector<std::string>* args);

// The report from a finished judge.py process (exposed for tests).
EvaluationReport report_from_run(const SandboxResult& run, const std::string& nonce);

}  // namespace dice
