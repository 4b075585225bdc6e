// dice-reward's work handler: an EvalRequest envelope in, one Verdict envelope out, through the
// RewardPipeline, or copied from the verdict of the same text for the same task
// (verdict_memo.h, reward.reuse_verdicts); the service loop (net/service/worker_loop.h) does the
// rest. Verdicts are counted by failure class for /metrics, and reused and retried ones apart.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "net/service/metrics_registry.h"
#include "net/service/worker_loop.h"
#include "reward/pipeline.h"
#include "reward/verdict_memo.h"

namespace dice {

// GPU slot names for `gpus` (CUDA ordinals) with `per_gpu` candidates on each at once:
// {"0/0", "0/1", "1/0", ...}. The part before '/' is what CUDA_VISIBLE_DEVICES gets.
std::vector<std::string> gpu_slot_names(const std::vector<int>& gpus, int per_gpu);

// The CUDA ordinals in a CUDA_VISIBLE_DEVICES value ("0,1" -> {0, 1}); InvalidArgument naming the
// bad entry for anything else (UUIDs are not supported: give ordinals).
Result<std::vector<int>> parse_visible_devices(const std::string& value);

// The GPUs this process evaluates on: CUDA_VISIBLE_DEVICES parsed, or {0} when it is unset.
// InvalidArgument for a value that does not parse; Unavailable when it names no GPU.
Result<std::vector<int>> visible_gpus();

class RewardWorker {
 public:
  RewardWorker(const RewardOptions& options, Toolchain toolchain, PipelineIdentity identity,
               service::MetricsRegistry& registry);

  // The WorkHandler: InvalidArgument for a message that is not an EvalRequest.
  Status handle(const wire::Decoded<schema::Envelope>& work, service::ResultSink& sink);

  Compiler& compiler() { return pipeline_.compiler(); }

 private:
  RewardPipeline pipeline_;
  std::unique_ptr<VerdictMemo> memo_;  // null without reward.reuse_verdicts
  service::MetricsRegistry& registry_;
  service::Counter* compile_seconds_ = nullptr;
  service::Counter* eval_seconds_ = nullptr;
  service::Counter* reused_ = nullptr;
  service::Counter* retried_ = nullptr;  // evaluations retried (evaluation_retry.h)
};

// Handler threads of a worker: one per GPU slot and compile job, so the compile pool stays busy
// while every slot runs one; twice that with reuse_verdicts, as a repeat waits for its original
// without holding either (samples of one task arrive one after another).
std::uint32_t reward_worker_capacity(const RewardOptions& options, std::size_t slots);

}  // namespace dice
