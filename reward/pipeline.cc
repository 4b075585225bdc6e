#include "reward/pipeline.h"

#include "common/log.h"
#include "common/task/shape_variants.h"
#include "reward/extract.h"
#include "reward/reward_policy.h"
#include "reward/sandbox_netns.h"

namespace dice {
namespace {

using FC = schema::FailureClass;

CompileOptions compile_options(const RewardOptions& o) {
  CompileOptions c;
  c.jobs = o.compile_jobs;
  c.cache_dir = o.compile_cache_dir.empty() ? "runs/compile_cache" : o.compile_cache_dir;
  c.timeout_seconds = o.compile_budget_seconds;
  c.memory_limit_mb = o.compile_memory_limit_mb;
  c.memory_budget_mb = o.compile_memory_mb;
  c.root_binds = o.sandbox.root_binds;
  c.cgroups = o.sandbox.cgroups;
  return c;
}

void set_findings(schema::Verdict::Builder verdict, const std::vector<StaticFinding>& findings) {
  auto list = verdict.initFindings(static_cast<unsigned>(findings.size()));
  for (unsigned i = 0; i < findings.size(); ++i) {
    list[i].setCheck(findings[i].check);
    list[i].setDetail(findings[i].detail);
    list[i].setFatal(findings[i].fatal);
  }
}

std::string clip(const std::string& text, size_t n = 4000) {
  return text.size() <= n ? text : text.substr(0, n) + "...";
}

}  // namespace

SandboxSpec sandbox_from_options(const SandboxOptions& o, double timeout_seconds) {
  SandboxSpec spec;
  spec.timeout_seconds = timeout_seconds;
  spec.memory_limit_mb = o.memory_limit_mb;
  spec.cpu_time_seconds = o.cpu_time_seconds;
  spec.max_output_mb = o.max_output_mb;
  spec.max_processes = o.max_processes;
  spec.allow_network = o.allow_network;
  spec.read_only_paths = o.root_binds;
  spec.cgroups = o.cgroups;
  // OpenMP (torch's intra-op pool) and BLAS start one thread per core unless told otherwise: on a
  // 32-core node that alone passes RLIMIT_NPROC and the candidate dies in pthread_create.
  for (const char* pool : {"OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"}) {
    spec.env.push_back(std::string(pool) + "=" + std::to_string(o.cpu_threads));
  }
  return spec;
}

GpuSlotPool::GpuSlotPool(std::vector<std::string> slots)
    : free_(std::move(slots)), empty_pool_(free_.empty()) {}

std::string GpuSlotPool::acquire() {
  if (empty_pool_) return "";
  std::unique_lock<std::mutex> lock(mutex_);
  freed_.wait(lock, [&] { return !free_.empty(); });
  std::string slot = std::move(free_.back());
  free_.pop_back();
  return slot;
}

void GpuSlotPool::release(const std::string& slot) {
  if (empty_pool_) return;
  std::lock_guard<std::mutex> lock(mutex_);
  free_.push_back(slot);
  freed_.notify_one();
}

Result<Toolchain> probe_reward_toolchain(const RewardOptions& options) {
  DICE_RETURN_IF_ERROR(kernel_check_available(options.kernel_check, DICE_LAUNCH_PROBE_PATH));
  ToolchainOptions toolchain;
  toolchain.nvcc = options.nvcc_path;
  toolchain.python = options.python_path;
  toolchain.cuda_arch = options.cuda_arch;
  return probe_toolchain(toolchain);
}

std::string gpu_of_slot(const std::string& slot) {
  return slot.substr(0, slot.find('/'));
}

RewardPipeline::RewardPipeline(const RewardOptions& options, Toolchain toolchain,
                               PipelineIdentity identity)
    : options_(options),
      identity_(std::move(identity)),
      slots_(identity_.gpu_slots),
      compiler_(std::move(toolchain), compile_options(options)) {
  // One network namespace ready per slot (evaluations run one per slot at a time), so the first
  // evaluations do not wait for the pool to grow.
  // Per slot: the running evaluation and, with prestarted evaluators, those started ahead.
  const int per_slot = 1 + (options.prestart_evaluators ? options.evaluators_ahead : 0);
  NetnsPool::shared().prewarm(per_slot * static_cast<int>(identity_.gpu_slots.size()));
  if (options.prestart_evaluators) {
    prestarts_[""] = std::make_unique<EvaluatorPrestart>(options.evaluators_ahead);
    for (const auto& slot : identity_.gpu_slots) {
      prestarts_[slot] = std::make_unique<EvaluatorPrestart>(options.evaluators_ahead);
    }
  }
  if (options.timing.exclusive) {
    for (const auto& slot : identity_.gpu_slots) {
      auto& turns = gpu_turns_[gpu_of_slot(slot)];
      if (!turns) turns = std::make_unique<GpuTurns>();
    }
  }
}

void RewardPipeline::evaluate(schema::EvalRequest::Reader request,
                              schema::Verdict::Builder verdict) {
  auto task = request.getTask();
  auto candidate = request.getCandidate();
  verdict.setWorkId(request.getWorkId());
  verdict.setRunId(candidate.getRunId());
  verdict.setStep(candidate.getStep());
  verdict.setTaskId(task.getId());
  verdict.setGroup(candidate.getGroup());
  verdict.setSampleIndex(candidate.getSampleIndex());
  verdict.setPolicyVersion(candidate.getPolicyVersion());
  verdict.setRewardWorker(identity_.worker_id);
  verdict.setReward(0);
  auto finish = [&](FC failure, const std::string& excerpt) {
    verdict.setFailure(failure);
    verdict.setLogExcerpt(clip(excerpt));
  };

  // 1. The file to evaluate.
  const bool infill = task.getPhase() == schema::Phase::INFILL;
  ExtractedSource extracted =
      extract_candidate(candidate.getText().cStr(), infill ? task.getInfillPrefix().cStr() : "",
                        infill ? task.getInfillSuffix().cStr() : "");
  if (extracted.failure != FC::NONE) return finish(extracted.failure, extracted.detail);

  // 2. Static checks.
  StaticCheckOptions static_options;
  static_options.python = options_.python_path;
  auto checked = run_static_check(extracted.source, static_options);
  if (!checked.ok()) return finish(FC::INTERNAL_ERROR, checked.status().to_string());
  std::vector<StaticFinding> findings = checked->findings;
  set_findings(verdict, findings);
  if (checked->failure() != FC::NONE) return finish(checked->failure(), checked->summary());

  // 3. Sources and compile.
  auto sources = extract_extension_sources(extracted.source, options_.python_path,
                                           DICE_REWARD_PYTHON_DIR, static_options.sandbox);
  if (!sources.ok()) {
    return finish(sources.status().code() == StatusCode::kInvalidArgument ? FC::COMPILE_ERROR
                                                                          : FC::INTERNAL_ERROR,
                  sources.status().message());
  }
  // One budget for all of the candidate's modules (compile_limits.h).
  auto budget = std::make_shared<CompileBudget>(options_.compile_budget_seconds);
  std::vector<std::shared_future<CompileOutcome>> futures;
  for (const auto& ext : sources.value()) futures.push_back(compiler_.submit(ext, budget));
  std::vector<CompileOutcome> modules;
  double compile_seconds = 0;
  std::string hashes;
  for (auto& f : futures) {
    CompileOutcome out = f.get();
    compile_seconds += out.seconds;
    hashes += (hashes.empty() ? "" : ",") + out.source_hash;
    if (out.failure != FC::NONE) {
      verdict.setSourceHash(hashes);
      verdict.getTimings().setCompileSeconds(static_cast<float>(compile_seconds));
      return finish(out.failure, out.log_excerpt);
    }
    modules.push_back(std::move(out));
  }
  verdict.setSourceHash(hashes);
  verdict.setCompiled(true);
  verdict.getTimings().setCompileSeconds(static_cast<float>(compile_seconds));

  // 4. Evaluate.
  EvaluatorOptions eval;
  eval.python = options_.python_path;
  eval.trials = options_.correctness_trials;
  eval.seed = options_.input_seed;
  eval.tolerance = options_.tolerance;
  eval.timing = options_.timing;
  eval.kernel_check = options_.kernel_check;
  const double timeout =
      task.getTimeoutSeconds() > 0 ? task.getTimeoutSeconds() : options_.timeout_seconds;
  eval.sandbox = sandbox_from_options(options_.sandbox, timeout);
  const std::string slot = slots_.acquire();
  if (!slot.empty()) {
    eval.sandbox.env.push_back("CUDA_VISIBLE_DEVICES=" + gpu_of_slot(slot));
    // The slot's GPU is the only device node in the run's root (inside it is CUDA device 0).
    eval.sandbox.gpu_devices = {std::stoi(gpu_of_slot(slot))};
    const auto turns = gpu_turns_.find(gpu_of_slot(slot));
    if (turns != gpu_turns_.end()) eval.gpu_turns = turns->second.get();
  }
  verdict.setGpuSlot(slot);
  auto prestart = prestarts_.find(slot);
  EvaluationJob job{task.getReferenceSource().cStr(), shape_variant_args(task), extracted.source,
                    std::move(modules), checked->kernels};
  auto report = evaluate_candidate(job, eval,
                                   prestart == prestarts_.end() ? nullptr : prestart->second.get());
  slots_.release(slot);
  if (!report.ok()) return finish(FC::INTERNAL_ERROR, report.status().to_string());
  DICE_LOG(Debug) << "evaluated" << kv("slot", slot) << kv("seconds", report->eval_seconds)
                  << kv("phases", report->phases);
  findings.insert(findings.end(), report->findings.begin(), report->findings.end());
  set_findings(verdict, findings);
  auto timings = verdict.getTimings();
  timings.setEvalSeconds(static_cast<float>(report->eval_seconds));
  timings.setKernelMsMean(static_cast<float>(report->kernel_ms_mean));
  timings.setKernelMsStd(static_cast<float>(report->kernel_ms_std));
  timings.setReferenceMsMean(static_cast<float>(report->reference_ms_mean));
  timings.setReferenceMsStd(static_cast<float>(report->reference_ms_std));
  timings.setTimingTrials(static_cast<unsigned>(report->timing_trials));
  verdict.setCorrect(report->correct);
  verdict.setSpeedup(static_cast<float>(report->speedup));
  verdict.setCorrectnessTrials(static_cast<unsigned>(report->trials));
  verdict.setMaxAbsError(static_cast<float>(report->max_abs_error));
  bool fatal = false;
  for (const auto& f : findings) fatal |= f.fatal;
  verdict.setReward(
      compute_reward(options_.policy, {true, report->correct, report->speedup, fatal}));
  if (report->failure != FC::NONE) {
    return finish(report->failure, report->detail + "\n" + report->log_tail);
  }
  verdict.setFailure(FC::NONE);
}

}  // namespace dice
