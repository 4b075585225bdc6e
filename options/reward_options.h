// Options of a reward worker: compiling candidates (nvcc, parallel jobs, cache), checking them
// against the PyTorch reference (trials, tolerances), optional timing, the reward policy and the
// sandbox each candidate runs in. Defaults are DICE's released RL reward: binary, 1 correctness
// trial, no timing, 300 s timeout. Each field is documented once, in visit_fields.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "common/config/config_errors.h"
#include "common/config/field_checks.h"

namespace dice {

enum class RewardPolicy { kBinary, kSpeedupThreshold };
inline constexpr config::EnumName<RewardPolicy> kRewardPolicyNames[] = {
    {RewardPolicy::kBinary, "binary"}, {RewardPolicy::kSpeedupThreshold, "speedup_threshold"}};
constexpr const auto& enum_names(RewardPolicy) {
  return kRewardPolicyNames;
}

// allclose tolerance (used as both atol and rtol, as KernelBench does) per output dtype.
struct ToleranceOptions {
  double fp32 = 1e-2;
  double fp16 = 1e-2;
  double bf16 = 1e-2;

  template <class V>
  void visit_fields(V& v) {
    v.field("fp32", fp32,
            "Tolerance for float32 outputs (KernelBench's newer default is 1e-4). Default: 0.01",
            config::greater_than(0));
    v.field("fp16", fp16, "Tolerance for float16 outputs. Default: 0.01", config::greater_than(0));
    v.field("bf16", bf16, "Tolerance for bfloat16 outputs. Default: 0.01", config::greater_than(0));
  }
};

struct TimingOptions {
  bool enabled = false;
  int trials = 100;
  int warmups = 3;
  // A candidate being timed has its GPU alone: the other slots' evaluations wait (gpu_turns.h).
  // On the H200 with 8 slots and no turns, the same candidates' speedups moved 0.28-4.1x (p10-p90)
  // between two runs; with one slot, 0.78-1.40x (2026-11-30; docs/BENCHMARKS.md, "Timed speedups
  // with 8 slots on one GPU are noise").
  bool exclusive = true;
  double turn_wait_seconds = 60;

  template <class V>
  void visit_fields(V& v) {
    v.field("enabled", enabled, "Time correct candidates against PyTorch eager. Default: false");
    v.field("trials", trials,
            "Calls of the candidate timed, split over the judge's TIMING_ROUNDS rounds "
            "(trials / TIMING_ROUNDS a round, rounded up, at least 2); each round is one request "
            "clocked by the judge, and the reference is timed on the same inputs once the "
            "candidate's processes are gone (reward/python/judge.py). Default: 100",
            config::at_least(1));
    v.field("warmups", warmups,
            "Untimed calls of each side first, at least 1 (the first use of a kernel loads it). "
            "Default: 3",
            config::at_least(0));
    v.field("exclusive", exclusive,
            "Time each candidate with its GPU to itself: the other slots' evaluations wait. "
            "Default: true");
    v.field("turn_wait_seconds", turn_wait_seconds,
            "Longest wait for a turn; past it the candidate is timed anyway, with a "
            "timing-not-exclusive finding. Default: 60",
            config::at_least(0.0));
  }
};

// How the evaluation checks that a kernel compiled from the candidate's own source ran during
// forward: torch's profiler (CUPTI's activity API, seconds of CPU for its first session in each
// evaluation process) or dice's launch probe (CUPTI's callback API on kernel launches,
// reward/evaluate/cupti/launch_probe.cc: 0.04-0.12 CPU-s on the H200), which falls back to the
// profiler for a forward that launches a CUDA graph. kAuto: the probe where this build has it
// (CMake found CUPTI), else the profiler; both judged the 60 dev items and every hack the same on
// the H200.
enum class KernelCheck { kAuto, kProfiler, kCupti };
inline constexpr config::EnumName<KernelCheck> kKernelCheckNames[] = {
    {KernelCheck::kAuto, "auto"},
    {KernelCheck::kProfiler, "profiler"},
    {KernelCheck::kCupti, "cupti"}};
constexpr const auto& enum_names(KernelCheck) {
  return kKernelCheckNames;
}

// What the candidate's extension may compute with besides its own kernels: the reward policy's
// rule on library calls (docs/SECURITY.md, "Library calls"). kOwnKernelsOnly refuses cuBLAS(Lt),
// cuDNN, cuFFT, cuRAND, cuSPARSE, cuSOLVER, NCCL (imported by the module: module_imports.py's
// vendor-library rule) and vendor kernels that are not the module's own (launched by a vendor
// library's file; by name, cuBLAS, cuDNN, CUTLASS and CUB ones, where the launching library is
// unknown: kernel_check.py) as antiCheat: RL rewards kernels written by hand. kAllowed accepts
// them, as KernelBench's and DICE's own evaluations do, leaving a non-fatal kLibraryCallsFinding in
// the verdict. PyTorch's own compute (ATen imports, ATen kernels, torch ops in forward) is refused
// under both.
enum class LibraryCalls { kOwnKernelsOnly, kAllowed };
inline constexpr config::EnumName<LibraryCalls> kLibraryCallsNames[] = {
    {LibraryCalls::kOwnKernelsOnly, "own_kernels_only"}, {LibraryCalls::kAllowed, "allowed"}};
constexpr const auto& enum_names(LibraryCalls) {
  return kLibraryCallsNames;
}
// The finding (check name) a library call leaves in a verdict: fatal under own_kernels_only,
// a note under allowed. Its presence is what separates dice-eval's two columns.
inline constexpr char kLibraryCallsFinding[] = "library-calls";

struct RewardPolicyOptions {
  RewardPolicy kind = RewardPolicy::kBinary;
  double min_speedup = 1.0;

  template <class V>
  void visit_fields(V& v) {
    v.field("kind", kind,
            "binary: 1 if it compiles and is correct; speedup_threshold: 1 only if also at least "
            "min_speedup times faster than eager. Default: binary");
    v.field("min_speedup", min_speedup,
            "Speedup needed for reward 1 under speedup_threshold. Default: 1",
            config::greater_than(0));
  }
};

// Per-run cgroups of the sandbox (reward/sandbox/sandbox_cgroup.h), and what a run does on a host
// that offers none.
enum class SandboxCgroups {
  kAuto,      // a cgroup where the host allows; rlimits only where not
  kRequired,  // no cgroup: the command is not run (sandbox-unavailable)
  kOff,       // rlimits only
};
inline constexpr config::EnumName<SandboxCgroups> kSandboxCgroupsNames[] = {
    {SandboxCgroups::kAuto, "auto"},
    {SandboxCgroups::kRequired, "required"},
    {SandboxCgroups::kOff, "off"}};
constexpr const auto& enum_names(SandboxCgroups) {
  return kSandboxCgroupsNames;
}

// Limits on the process that runs a candidate (it is untrusted code), and what of the host its
// root holds (reward/sandbox/sandbox.h, reward/sandbox/sandbox_root.h).
struct SandboxOptions {
  std::int64_t memory_limit_mb = 32768;
  int cpu_time_seconds = 600;
  std::int64_t max_output_mb = 64;
  int max_processes = 64;
  int cpu_threads = 4;
  bool allow_network = false;
  std::vector<std::string> root_binds;
  SandboxCgroups cgroups = SandboxCgroups::kAuto;
  std::int64_t gpu_memory_mb = 0;

  template <class V>
  void visit_fields(V& v) {
    v.field("memory_limit_mb", memory_limit_mb,
            "Address-space limit of a candidate process, in MiB. Default: 32768",
            config::at_least(256));
    v.field("cpu_time_seconds", cpu_time_seconds,
            "CPU-time limit of a candidate process. Default: 600", config::at_least(1));
    v.field(
        "max_output_mb", max_output_mb,
        "Largest file a candidate may write, and the most stdout/stderr kept, in MiB. Default: 64",
        config::at_least(1));
    v.field("max_processes", max_processes,
            "Process/thread limit inside the sandbox (nvcc needs a few). Default: 64",
            config::at_least(1));
    v.field("cpu_threads", cpu_threads,
            "CPU threads a candidate's thread pools may start (OMP_NUM_THREADS, MKL_NUM_THREADS, "
            "OPENBLAS_NUM_THREADS; torch's intra-op pool follows OMP_NUM_THREADS). Unset, OpenMP "
            "starts one per core, which on a large node passes max_processes and crashes the "
            "candidate. Default: 4",
            config::at_least(1));
    v.field("allow_network", allow_network, "Let candidates reach the network. Default: false");
    v.field("root_binds", root_binds,
            "Host folders or files bound read-only, at their own paths, into the root candidates "
            "and compilers run in, besides what it has anyway (/usr, /bin, /lib*, the CUDA "
            "toolkit under /usr/local, the interpreter's prefix and sys.path, LD_LIBRARY_PATH, "
            "the toolchain's include and library folders). One that does not exist: runs are not "
            "started (sandbox-unavailable). Default: []",
            config::is_path());
    v.field("cgroups", cgroups,
            "A cgroup per run with memory.max and pids.max: auto (where the host has cgroup v2 "
            "with the memory and pids controllers; rlimits only elsewhere), required (no cgroup: "
            "the run is not started, sandbox-unavailable) or off. Default: auto");
    v.field("gpu_memory_mb", gpu_memory_mb,
            "GPU memory the processes of one candidate may hold, in MiB, as the driver accounts "
            "it (NVML, read by the reward worker from outside the candidate's processes every "
            "50 ms): over it the candidate is killed and judged resourceLimit, so that it cannot "
            "take its neighbours' memory. 0: half of its slot's share of the GPU (the GPU's "
            "memory / (2 x the worker's slots on that GPU)); -1: no bound. Without NVML (or where "
            "it numbers processes otherwise than the worker) there is no bound, said once in the "
            "log. Default: 0",
            config::at_least(-1));
  }

  void validate(config::Checker& c) const {
    // Python, CUDA's and torch's own threads need room beside the pools.
    if (cpu_threads > max_processes / 2) {
      c.error("cpu_threads", "at most half of max_processes (" + std::to_string(max_processes) +
                                 "): the rest is for the interpreter's and CUDA's own threads");
    }
  }
};

// How far a reward worker takes a candidate. Only `full` judges correctness; the others are for
// machines without a GPU (tools/up there), and every verdict, step line, StepRecord and the
// run's note say which mode gave them, so no reward of theirs passes for a correct kernel.
enum class RewardMode { kFull, kCompileOnly, kExtractionOnly };
inline constexpr config::EnumName<RewardMode> kRewardModeNames[] = {
    {RewardMode::kFull, "full"},
    {RewardMode::kCompileOnly, "compile_only"},
    {RewardMode::kExtractionOnly, "extraction_only"}};
constexpr const auto& enum_names(RewardMode) {
  return kRewardModeNames;
}

struct RewardOptions {
  RewardMode mode = RewardMode::kFull;
  int gpu_slots = 1;
  std::string nvcc_path = "/usr/local/cuda/bin/nvcc";
  std::string python_path = "python3";
  std::string cuda_arch;
  int compile_jobs = 4;
  std::string compile_cache_dir = "runs/compile_cache";
  double compile_budget_seconds = 300;
  std::int64_t compile_memory_limit_mb = 8192;
  std::int64_t compile_memory_mb = 0;
  std::int64_t compile_build_memory_mb = 4096;
  std::int64_t compile_max_module_mb = 128;
  std::int64_t compile_cache_mb = 20480;
  double compile_cache_keep_seconds = 3600;
  int correctness_trials = 3;
  int input_seed = -1;
  ToleranceOptions tolerance;
  TimingOptions timing;
  int timeout_seconds = 300;
  bool prestart_evaluators = true;
  int evaluators_ahead = 1;
  int judge_jobs = 16;
  bool reuse_verdicts = true;
  bool confirm_failures_alone = true;
  KernelCheck kernel_check = KernelCheck::kAuto;
  LibraryCalls libraries = LibraryCalls::kOwnKernelsOnly;
  RewardPolicyOptions policy;
  SandboxOptions sandbox;

  template <class V>
  void visit_fields(V& v) {
    v.field("mode", mode,
            "full: compile, run on the GPU and compare with the reference (the only mode whose "
            "reward means a correct kernel); compile_only: reward 1 when the candidate compiles "
            "(no GPU, nvcc present); extraction_only: reward 1 when its code block extracts and "
            "passes the static checks (no GPU, no nvcc). correct stays false outside full, and "
            "each verdict carries a reward-mode finding. Default: full");
    v.field("gpu_slots", gpu_slots,
            "Candidates one worker evaluates on its GPU at once. Default: 1", config::at_least(1));
    v.field(
        "nvcc_path", nvcc_path,
        "The CUDA compiler (a bare name is looked up in PATH). Default: /usr/local/cuda/bin/nvcc",
        config::non_empty());
    v.field("python_path", python_path,
            "Python with torch, which runs the reference and the candidate. Default: python3",
            config::non_empty());
    v.field(
        "cuda_arch", cuda_arch,
        "Compile for this architecture only (e.g. sm_90); empty = the local GPU's. Default: empty");
    v.field("compile_jobs", compile_jobs,
            "Candidates compiled at once (compiling dominates reward cost). Default: 4",
            config::at_least(1));
    v.field("compile_cache_dir", compile_cache_dir,
            "Build cache keyed by source hash; empty disables it. Default: runs/compile_cache",
            config::is_path());
    v.field("compile_budget_seconds", compile_budget_seconds,
            "Wall-clock budget of one candidate's compile: all of its modules, header tiers and "
            "links together; a tier that ran out of time or memory is not retried with another. "
            "Waiting for compile memory before it starts is not counted. Default: 300",
            config::greater_than(0));
    v.field("compile_memory_limit_mb", compile_memory_limit_mb,
            "Address-space limit of each compiler process, in MiB (a build runs two at once: "
            "nvcc and the host compiler). Default: 8192",
            config::at_least(1024));
    v.field("compile_memory_mb", compile_memory_mb,
            "MiB this worker's compiles may hold at once: each build reserves "
            "compile_build_memory_mb until it ends, and waits while that does not fit, or while "
            "the host's available memory (MemAvailable) does not cover the reservations held and "
            "its own; 0 = three quarters of the host's memory (workers sharing a host should "
            "split it). Default: 0",
            config::at_least(0));
    v.field("compile_build_memory_mb", compile_build_memory_mb,
            "MiB one build reserves from compile_memory_mb: what a build's processes (nvcc, its "
            "stages and the host compiler side by side) hold at their peak, measured on the dev "
            "items with the full headers, with a margin (docs/BENCHMARKS.md). An estimate, not a "
            "limit: compile_memory_limit_mb bounds each compiler process, and a build past its "
            "reservation only keeps others waiting on the host's memory. Above twice "
            "compile_memory_limit_mb a build reserves twice it (it holds no more). Default: 4096",
            config::at_least(256));
    v.field("compile_max_module_mb", compile_max_module_mb,
            "Largest build a candidate may leave in the compile cache, in MiB: its module and "
            "generated sources (the linker cannot write a larger file either). A larger one is "
            "the candidate's resourceLimit and is not cached. Default: 128",
            config::at_least(1));
    v.field("compile_cache_mb", compile_cache_mb,
            "MiB the compile cache's builds may hold: after each build the least recently used "
            "(built or hit) are removed until the rest fit, except those used within "
            "compile_cache_keep_seconds; 0 = no limit. Default: 20480",
            config::at_least(0));
    v.field("compile_cache_keep_seconds", compile_cache_keep_seconds,
            "Compile cache entries used within this many seconds are never evicted (a worker "
            "sharing the folder may be about to read one). Default: 3600",
            config::at_least(0.0));
    v.field("correctness_trials", correctness_trials,
            "Random input sets a candidate must match the reference on (each run twice; one more "
            "set then checks for outputs cached across calls). Default: 3",
            config::at_least(1));
    v.field("input_seed", input_seed,
            "Seed of the model weights and inputs; -1 draws fresh seeds per candidate (a "
            "candidate cannot know its inputs ahead; the verdict's log records them). Default: -1",
            config::at_least(-1));
    v.field("tolerance", tolerance, "allclose tolerances by dtype.");
    v.field("timing", timing, "Timing of correct candidates.");
    v.field("timeout_seconds", timeout_seconds,
            "Wall-clock limit for checking one candidate (its evaluation; its compile has "
            "compile_budget_seconds). Default: 300",
            config::at_least(1));
    v.field("prestart_evaluators", prestart_evaluators,
            "Start each GPU slot's next evaluation process (python, torch, CUDA context) while "
            "the current one runs; each candidate still gets a fresh process. Default: true");
    v.field("evaluators_ahead", evaluators_ahead,
            "With prestart_evaluators: processes kept started ahead per slot (more hide a start "
            "that takes longer than an evaluation). Default: 1",
            config::at_least(1));
    v.field("judge_jobs", judge_jobs,
            "With prestart_evaluators: candidates one judge process judges, one after another, "
            "before a fresh one replaces it (the runner, which loads the candidate's code, is "
            "always fresh). The judge never runs candidate code and puts back what a job may "
            "change (torch's process-wide settings, its files, its cached GPU memory), and ends "
            "early when its CUDA context fails or half its CPU-time limit is used; reusing it "
            "saves its start (python, torch, the CUDA context), about a third of a candidate's "
            "CPU. 1: a fresh judge for every candidate. Default: 16",
            config::at_least(1));
    v.field("reuse_verdicts", reuse_verdicts,
            "A candidate whose response text equals one this worker judged (or is judging) for "
            "the same task gets a copy of that verdict (Verdict.reusedFrom names it) instead of "
            "a second compile and run: samples of one task often repeat, most of all once a "
            "policy is sure of itself. Verdicts of a service fault or of a time limit are not "
            "reused (they may not hold for a second run). Default: true");
    v.field("confirm_failures_alone", confirm_failures_alone,
            "A candidate whose evaluation shared its GPU with another and ended in a failure a "
            "neighbour can cause (runtimeError, importError, crashed, timeout, resourceLimit: "
            "its memory, its endless kernel) is judged once more with the GPU to itself, and "
            "that verdict stands (a confirmed-alone finding says so): one candidate's "
            "misbehaviour never fails another. Costs one more run of such failures, with the "
            "slots of that GPU waiting. Default: true");
    v.field("kernel_check", kernel_check,
            "How evaluation sees that the candidate's own kernel ran: profiler (torch's, seconds "
            "of CPU per evaluation process), cupti (dice's launch probe; needs a build that "
            "found CUPTI) or auto (cupti where this build has the probe, else profiler). "
            "Default: auto");
    v.field("libraries", libraries,
            "The reward policy's rule on library calls from the candidate's extension: "
            "own_kernels_only refuses cuBLAS(Lt), cuDNN, cuFFT, cuRAND, cuSPARSE, cuSOLVER and "
            "NCCL imports and the kernels of vendor libraries (launched by one; by name, cuBLAS, "
            "cuDNN, CUTLASS and CUB ones, where the launching library is unknown) as antiCheat "
            "(a fatal library-calls or module-imports finding naming the rule "
            "vendor-library), so RL rewards kernels written by hand; allowed accepts them beside "
            "the candidate's own kernels, as KernelBench and DICE evaluate (a library-calls "
            "note in the verdict). PyTorch's own compute is refused under both. For the whole "
            "worker: a phase's reward_policy does not change it. Default: own_kernels_only");
    v.field("policy", policy, "How a verdict becomes a reward.");
    v.field("sandbox", sandbox, "Limits on candidate and compiler processes, and their root.");
  }

  void validate(config::Checker& c) const {
    if (policy.kind == RewardPolicy::kSpeedupThreshold && !timing.enabled) {
      c.error("policy.kind", "speedup_threshold needs timing.enabled: true");
    }
    // One build's reservation (build_reservation_mb() of compile_limits.h) must fit the budget.
    const std::int64_t build_mb = std::min(compile_build_memory_mb, 2 * compile_memory_limit_mb);
    if (compile_memory_mb > 0 && compile_memory_mb < build_mb) {
      c.error("compile_memory_mb", "at least one build's reservation (" + std::to_string(build_mb) +
                                       ": compile_build_memory_mb, at most twice "
                                       "compile_memory_limit_mb)");
    }
  }
};

}  // namespace dice
