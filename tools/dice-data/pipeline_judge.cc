#include "tools/dice-data/pipeline_judge.h"

#include <algorithm>
#include <thread>
#include <utility>

#include "reward/judge/judge.h"
#include "reward/reward_worker.h"

namespace dice::data {
namespace {

RewardOptions reward_options(const SftJudgeOptions& o) {
  RewardOptions r;
  r.python_path = o.python;
  r.nvcc_path = o.nvcc;
  r.compile_cache_dir = o.compile_cache;
  r.compile_jobs = o.compile_jobs > 0
                       ? o.compile_jobs
                       : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  r.correctness_trials = o.correctness_trials;
  r.timeout_seconds = o.timeout_seconds;
  r.sandbox.memory_limit_mb = 65536;  // dice-judge's default: torch and CUDA map a lot
  r.timing.enabled = true;
  r.timing.trials = o.timing_trials;
  r.timing.exclusive = true;
  r.policy.kind = RewardPolicy::kBinary;
  r.reuse_verdicts = false;
  return r;
}

class PipelineJudge : public PairJudge {
 public:
  PipelineJudge(const RewardOptions& options, Toolchain toolchain, std::vector<std::string> slots,
                JudgeCapability capability, std::ostream& log)
      : options_(options),
        slots_(slots.size()),
        capability_(std::move(capability)),
        log_(log),
        pipeline_(options, std::move(toolchain), PipelineIdentity{"dice-data", std::move(slots)}) {}

  JudgeCapability capability() const override { return capability_; }

  Status judge(const std::vector<JudgeItem>& items,
               const std::function<void(const std::string&)>& emit) override {
    if (capability_.measures && !headers_ready_) {
      const int ready = pipeline_.compiler().prepare_binding_headers();
      log_ << "dice-data build-sft: " << ready << " precompiled binding headers ready\n";
      headers_ready_ = true;
    }
    // Enough in flight that every compile job and every GPU slot has a candidate (dice-judge's).
    const int threads = options_.compile_jobs + static_cast<int>(std::max<std::size_t>(1, slots_));
    const JudgeSummary summary = run_judge(pipeline_, items, threads, emit);
    log_ << "dice-data build-sft: " << (capability_.measures ? "judged " : "screened ")
         << summary.candidates << " pairs in " << summary.seconds << " s: " << summary.compiled
         << " compiled, " << summary.correct << " correct\n";
    return Status::ok_status();
  }

 private:
  RewardOptions options_;
  std::size_t slots_;
  JudgeCapability capability_;
  std::ostream& log_;
  RewardPipeline pipeline_;
  bool headers_ready_ = false;
};

}  // namespace

Result<std::unique_ptr<PairJudge>> open_pipeline_judge(const SftJudgeOptions& options,
                                                       std::ostream& log) {
  RewardOptions reward = reward_options(options);
  auto toolchain = probe_reward_toolchain(reward);
  std::string no_gpu;
  std::vector<std::string> slots;
  if (toolchain.ok()) {
    auto gpus = visible_gpus();
    if (gpus.ok()) {
      slots = gpu_slot_names(*gpus, options.gpu_slots);
    } else if (gpus.status().code() == StatusCode::kInvalidArgument) {
      return gpus.status();
    } else {
      no_gpu = gpus.status().message();
    }
  } else {
    // The probe's advice to set cuda_arch is for dice-reward: build-sft times on this machine's
    // GPU, so it has no such flag.
    no_gpu = toolchain.status().message();
    const std::string advice = "; set cuda_arch, e.g. sm_90";
    if (no_gpu.size() > advice.size() &&
        no_gpu.compare(no_gpu.size() - advice.size(), advice.size(), advice) == 0)
      no_gpu.resize(no_gpu.size() - advice.size());
  }
  JudgeCapability capability;
  if (no_gpu.empty()) {
    capability.measures = true;
    capability.mode = "full";
    log << "dice-data build-sft: judging on " << slots.size() << " GPU slots, arch "
        << toolchain->arch << ", torch " << toolchain->torch_version << ", timing "
        << reward.timing.trials << " trials\n";
    return std::unique_ptr<PairJudge>(std::make_unique<PipelineJudge>(
        reward, std::move(toolchain).value(), std::move(slots), std::move(capability), log));
  }
  // Extraction and static checks need neither nvcc nor torch nor a GPU (reward/main.cc does the
  // same for reward.mode extraction_only).
  reward.mode = RewardMode::kExtractionOnly;
  reward.timing.enabled = false;
  reward.prestart_evaluators = false;
  capability.mode = "extraction_only";
  capability.no_gpu = no_gpu;
  return std::unique_ptr<PairJudge>(std::make_unique<PipelineJudge>(
      reward, Toolchain{}, std::vector<std::string>{}, std::move(capability), log));
}

}  // namespace dice::data
