// The reward pipeline for one EvalRequest, in the order failures are reported
// (schemas/verdict.capnp: the first failure in pipeline order wins):
//   extract (noCodeBlock, skeletonAltered) -> static checks (syntaxError, staticCheck)
//   -> load_inline sources (compileError when not static) -> compile (compileError,
//   compileTimeout; cached by content hash) -> evaluate in the sandbox (importError,
//   runtimeError, shapeMismatch, incorrect, antiCheat, timeout, resourceLimit, crashed...)
//   -> reward policy.
// The worker's queues (compile pool, GPU slots) sit around this; it is one candidate's path.
#pragma once

#include <string>

#include "reward/compile.h"
#include "reward/evaluator.h"
#include "reward/reward_options.h"
#include "reward/static_check.h"
#include "reward/toolchain.h"
#include "schemas/verdict.capnp.h"

namespace dice {

struct PipelineIdentity {
  std::string worker_id;  // Verdict.rewardWorker
  std::string gpu_slot;   // Verdict.gpuSlot, e.g. "0"
};

// The sandbox limits of candidate processes from the config.
SandboxSpec sandbox_from_options(const SandboxOptions& options, double timeout_seconds);

class RewardPipeline {
 public:
  RewardPipeline(const RewardOptions& options, Toolchain toolchain, PipelineIdentity identity);

  // Fills every field of `verdict` it knows. Never throws: the service's own failures become
  // failure = internalError with the reason in logExcerpt.
  void evaluate(schema::EvalRequest::Reader request, schema::Verdict::Builder verdict);

  Compiler& compiler() { return compiler_; }

 private:
  RewardOptions options_;
  PipelineIdentity identity_;
  Compiler compiler_;
};

}  // namespace dice
