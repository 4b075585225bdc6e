// The reward pipeline for one EvalRequest, in the order failures are reported
// (schemas/verdict.capnp: the first failure in pipeline order wins):
//   extract (noCodeBlock, skeletonAltered) -> static checks (syntaxError, staticCheck)
//   -> load_inline sources (compileError when not static) -> compile (compileError,
//   compileTimeout; cached by content hash) -> evaluate in the sandbox (importError,
//   runtimeError, shapeMismatch, incorrect, antiCheat, timeout, resourceLimit, crashed...)
//   -> reward policy. Compiles and evaluations whose sandbox could not be set up do not run:
//   sandboxUnavailable, with the layer and errno in the excerpt.
// The worker's queues (compile pool, GPU slots) sit around this; it is one candidate's path.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "net/wire/verdict_identity.h"  // set_verdict_identity, for the pipeline's callers
#include "options/reward_options.h"
#include "reward/compile/compile.h"
#include "reward/compile/toolchain.h"
#include "reward/evaluate/evaluator.h"
#include "reward/gpu_slot_pool.h"
#include "reward/static_check.h"
#include "schemas/verdict.capnp.h"

namespace dice {

// probe_toolchain() with the reward options' nvcc, python and cuda_arch; an error too when the
// options ask for a kernel check this build cannot run (kernel_check_available).
Result<Toolchain> probe_reward_toolchain(const RewardOptions& options);

struct PipelineIdentity {
  std::string worker_id;               // Verdict.rewardWorker
  std::vector<std::string> gpu_slots;  // GPU slots ("0", or "0/2": half of GPU 0); empty: no GPU
};

// The sandbox limits of candidate processes from the config.
SandboxSpec sandbox_from_options(const SandboxOptions& options, double timeout_seconds);

class RewardPipeline {
 public:
  RewardPipeline(const RewardOptions& options, Toolchain toolchain, PipelineIdentity identity);

  // Fills every field of `verdict` it knows. Never throws: the service's own failures become
  // failure = internalError with the reason in logExcerpt. Safe to call from several threads:
  // compiles share the pool of compile jobs, evaluations wait for a GPU slot.
  // `cancellation` (the learner's cancel of the item; may be null): once set, no further stage
  // starts, a judging in progress has its sandboxed processes killed, and the verdict is
  // internalError "cancelled"; the caller drops it. A compile in progress runs to its end (the
  // compile pool shares it with every candidate of the same source, and caches it).
  void evaluate(schema::EvalRequest::Reader request, schema::Verdict::Builder verdict,
                Cancellation* cancellation = nullptr);

  Compiler& compiler() { return compiler_; }
  const PipelineIdentity& identity() const { return identity_; }

 private:
  // Stage 3 of evaluate(): the candidate's load_inline sources (read with the `parser` sandbox)
  // built against one budget, into `modules` and the verdict's builds. False when a build failed
  // and the verdict was finished.
  bool compile_candidate(const std::string& source, const SandboxSpec& parser,
                         schema::Verdict::Builder verdict, std::vector<CompileOutcome>* modules);
  // Stage 4: the compiled candidate evaluated on a GPU slot (once more on another when the
  // service failed it: evaluation_retry.h), its report into the verdict.
  void evaluate_compiled(schema::Task::Reader task, const std::string& source,
                         std::vector<CompileOutcome> modules,
                         const std::vector<std::string>& kernels,
                         std::vector<StaticFinding> findings, Cancellation* cancellation,
                         schema::Verdict::Builder verdict);

  RewardOptions options_;
  PipelineIdentity identity_;
  GpuSlotPool slots_;
  // Per slot ("" without slots), when options.prestart_evaluators.
  std::map<std::string, std::unique_ptr<EvaluatorPrestart>> prestarts_;
  // Per GPU (a slot's name up to its '/'), when options.timing.exclusive: its slots' evaluations
  // share it while checking and have it alone while timed (EvaluatorOptions::gpu_turns).
  std::map<std::string, std::unique_ptr<GpuTurns>> gpu_turns_;
  Compiler compiler_;
};

}  // namespace dice
