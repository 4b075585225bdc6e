#include "reward/pipeline.h"

#include <algorithm>

#include "common/log.h"
#include "net/wire/reward_policy_spec.h"
#include "reward/evaluation_retry.h"
#include "reward/extract.h"
#include "reward/reward_policy.h"
#include "reward/sandbox/sandbox_netns.h"
#include "tasks/shape_variants.h"

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
  c.build_memory_mb = o.compile_build_memory_mb;
  c.max_module_mb = o.compile_max_module_mb;
  c.cache_budget_mb = o.compile_cache_mb;
  c.cache_keep_seconds = o.compile_cache_keep_seconds;
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

// The end of the pipeline for a candidate that failed at some stage.
void finish(schema::Verdict::Builder verdict, FC failure, const std::string& excerpt) {
  verdict.setFailure(failure);
  verdict.setLogExcerpt(clip(excerpt));
}

// The evaluator's options for `task`: the reward options' trials, tolerances, timing and sandbox
// limits, with the task's own timeout where it has one. No GPU slot yet.
EvaluatorOptions evaluator_options(const RewardOptions& options, schema::Task::Reader task) {
  EvaluatorOptions eval;
  eval.python = options.python_path;
  eval.trials = options.correctness_trials;
  eval.seed = options.input_seed;
  eval.tolerance = options.tolerance;
  eval.timing = options.timing;
  eval.timed = task.getWantTiming();
  eval.confirm_failures_alone = options.confirm_failures_alone;
  eval.judge_jobs = options.judge_jobs;
  eval.kernel_check = options.kernel_check;
  eval.libraries = options.libraries;
  const double timeout =
      task.getTimeoutSeconds() > 0 ? task.getTimeoutSeconds() : options.timeout_seconds;
  eval.sandbox = sandbox_from_options(options.sandbox, timeout);
  eval.gpu_memory_mb = options.sandbox.gpu_memory_mb;
  return eval;
}

// The evaluation's outcome into the verdict: findings, timings, correctness and the reward.
void record_report(const EvaluationReport& report, const RewardPolicyOptions& policy,
                   std::vector<StaticFinding> findings, schema::Verdict::Builder verdict) {
  findings.insert(findings.end(), report.findings.begin(), report.findings.end());
  set_findings(verdict, findings);
  auto timings = verdict.getTimings();
  timings.setEvalSeconds(static_cast<float>(report.eval_seconds));
  timings.setKernelMsMean(static_cast<float>(report.kernel_ms_mean));
  timings.setKernelMsStd(static_cast<float>(report.kernel_ms_std));
  timings.setReferenceMsMean(static_cast<float>(report.reference_ms_mean));
  timings.setReferenceMsStd(static_cast<float>(report.reference_ms_std));
  timings.setTimingTrials(static_cast<unsigned>(report.timing_trials));
  verdict.setCorrect(report.correct);
  verdict.setSpeedup(static_cast<float>(report.speedup));
  verdict.setCorrectnessTrials(static_cast<unsigned>(report.trials));
  verdict.setMaxAbsError(static_cast<float>(report.max_abs_error));
  bool fatal = false;
  for (const auto& f : findings) fatal |= f.fatal;
  verdict.setReward(compute_reward(policy, {true, report.correct, report.speedup, fatal}));
  if (report.failure != FC::NONE) {
    return finish(verdict, report.failure, report.detail + "\n" + report.log_tail);
  }
  verdict.setFailure(FC::NONE);
}

// True, with the verdict finished as cancelled, when the learner cancelled the item: the next
// stage does not start.
bool stop_if_cancelled(const Cancellation* cancellation, const char* before,
                       schema::Verdict::Builder verdict) {
  if (cancellation == nullptr || !cancellation->cancelled()) return false;
  finish(verdict, FC::INTERNAL_ERROR,
         std::string("cancelled by the learner before ") + before + ": not judged");
  return true;
}

// Outside reward.mode full, the stage where the mode stops: a non-fatal `reward-mode` finding
// that says what was not checked, reward 1, correct false.
void stop_at_reward_mode(RewardMode mode, std::vector<StaticFinding> findings,
                         schema::Verdict::Builder verdict) {
  findings.push_back({"reward-mode",
                      mode == RewardMode::kCompileOnly
                          ? "compile_only: compiled, never run (no GPU): correctness not checked"
                          : "extraction_only: extracted and statically checked, never compiled or "
                            "run (no GPU, no nvcc): correctness not checked",
                      false, 0});
  set_findings(verdict, findings);
  verdict.setCorrect(false);
  verdict.setReward(1.0f);
  verdict.setFailure(FC::NONE);
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

Result<Toolchain> probe_reward_toolchain(const RewardOptions& options) {
  DICE_RETURN_IF_ERROR(kernel_check_available(options.kernel_check, DICE_LAUNCH_PROBE_PATH));
  ToolchainOptions toolchain;
  toolchain.nvcc = options.nvcc_path;
  toolchain.python = options.python_path;
  toolchain.cuda_arch = options.cuda_arch;
  return probe_toolchain(toolchain);
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
  // Turns at each GPU: a timing has it alone, and a failure a neighbour may have caused is
  // judged again alone (evaluator.h).
  if (options.timing.exclusive || options.confirm_failures_alone) {
    for (const auto& slot : identity_.gpu_slots) {
      auto& turns = gpu_turns_[gpu_of_slot(slot)];
      if (!turns) turns = std::make_unique<GpuTurns>();
    }
  }
}

void RewardPipeline::evaluate(schema::EvalRequest::Reader request, schema::Verdict::Builder verdict,
                              Cancellation* cancellation) {
  auto task = request.getTask();
  auto candidate = request.getCandidate();
  set_verdict_identity(request, identity_.worker_id, verdict);
  verdict.setReward(0);

  // 1. The file to evaluate.
  const bool infill = task.getPhase() == schema::Phase::INFILL;
  ExtractedSource extracted =
      extract_candidate(candidate.getText().cStr(), infill ? task.getInfillPrefix().cStr() : "",
                        infill ? task.getInfillSuffix().cStr() : "");
  if (extracted.failure != FC::NONE) return finish(verdict, extracted.failure, extracted.detail);
  verdict.setEvaluatedSource(extracted.source);

  // 2. Static checks.
  StaticCheckOptions static_options;
  static_options.python = options_.python_path;
  auto checked = run_static_check(extracted.source, static_options);
  if (!checked.ok()) return finish(verdict, FC::INTERNAL_ERROR, checked.status().to_string());
  std::vector<StaticFinding> findings = checked->findings;
  set_findings(verdict, findings);
  if (checked->failure() != FC::NONE) {
    return finish(verdict, checked->failure(), checked->summary());
  }
  if (options_.mode == RewardMode::kExtractionOnly) {
    return stop_at_reward_mode(options_.mode, std::move(findings), verdict);
  }

  // 3. Sources and compile.
  if (stop_if_cancelled(cancellation, "compiling", verdict)) return;
  std::vector<CompileOutcome> modules;
  if (!compile_candidate(extracted.source, static_options.sandbox, verdict, &modules)) return;
  verdict.setCompiled(true);
  if (options_.mode == RewardMode::kCompileOnly) {
    return stop_at_reward_mode(options_.mode, std::move(findings), verdict);
  }

  // 4. Evaluate.
  if (stop_if_cancelled(cancellation, "its evaluation", verdict)) return;
  evaluate_compiled(task, extracted.source, std::move(modules), checked->kernels,
                    std::move(findings), cancellation, verdict);
}

bool RewardPipeline::compile_candidate(const std::string& source, const SandboxSpec& parser,
                                       schema::Verdict::Builder verdict,
                                       std::vector<CompileOutcome>* modules) {
  auto sources =
      extract_extension_sources(source, options_.python_path, DICE_REWARD_PYTHON_DIR, parser);
  if (!sources.ok()) {
    finish(verdict,
           sources.status().code() == StatusCode::kInvalidArgument ? FC::COMPILE_ERROR
                                                                   : FC::INTERNAL_ERROR,
           sources.status().message());
    return false;
  }
  // One budget for all of the candidate's modules (compile_limits.h).
  auto budget = std::make_shared<CompileBudget>(options_.compile_budget_seconds);
  std::vector<std::shared_future<CompileOutcome>> futures;
  for (const auto& ext : sources.value()) futures.push_back(compiler_.submit(ext, budget));
  // The builds in order, up to the first that failed (the later ones are not waited for).
  for (auto& f : futures) {
    modules->push_back(f.get());
    if (modules->back().failure != FC::NONE) break;
  }
  double compile_seconds = 0;
  auto builds = verdict.initBuilds(static_cast<unsigned>(modules->size()));
  for (unsigned i = 0; i < modules->size(); ++i) {
    const CompileOutcome& out = (*modules)[i];
    compile_seconds += out.seconds;
    builds[i].setSourceHash(out.source_hash);
    builds[i].setCompiled(out.failure == FC::NONE);
    builds[i].setCompileSeconds(static_cast<float>(out.seconds));
    if (out.failure != FC::NONE) builds[i].setLog(clip(out.log_excerpt));
  }
  verdict.getTimings().setCompileSeconds(static_cast<float>(compile_seconds));
  if (!modules->empty() && modules->back().failure != FC::NONE) {
    finish(verdict, modules->back().failure, modules->back().log_excerpt);
    return false;
  }
  return true;
}

void RewardPipeline::evaluate_compiled(schema::Task::Reader task, const std::string& source,
                                       std::vector<CompileOutcome> modules,
                                       const std::vector<std::string>& kernels,
                                       std::vector<StaticFinding> findings,
                                       Cancellation* cancellation,
                                       schema::Verdict::Builder verdict) {
  EvaluatorOptions base = evaluator_options(options_, task);
  base.cancellation = cancellation;
  EvaluationJob job{task.getReferenceSource().cStr(), shape_variant_args(task), source,
                    std::move(modules), kernels};
  const RetriedEvaluation run = evaluate_with_one_retry(
      slots_, cancellation, [&](const std::string& slot) -> Result<EvaluationReport> {
        // Cancelled while it waited for the slot: the slot goes to the next candidate at once.
        if (cancellation != nullptr && cancellation->cancelled()) {
          return Status::aborted("cancelled by the learner before its evaluation: not judged");
        }
        EvaluatorOptions eval = base;
        if (!slot.empty()) {
          eval.sandbox.env.push_back("CUDA_VISIBLE_DEVICES=" + gpu_of_slot(slot));
          // The slot's GPU is the only device node in the run's root (inside it is CUDA device 0).
          eval.sandbox.gpu_devices = {std::stoi(gpu_of_slot(slot))};
          eval.slots_on_gpu = static_cast<int>(std::count_if(
              identity_.gpu_slots.begin(), identity_.gpu_slots.end(),
              [&](const std::string& s) { return gpu_of_slot(s) == gpu_of_slot(slot); }));
          const auto turns = gpu_turns_.find(gpu_of_slot(slot));
          if (turns != gpu_turns_.end()) eval.gpu_turns = turns->second.get();
        }
        const auto prestart = prestarts_.find(slot);
        return evaluate_candidate(job, eval,
                                  prestart == prestarts_.end() ? nullptr : prestart->second.get());
      });
  verdict.setGpuSlot(run.slot);
  if (!run.retried_after.empty()) verdict.setRetriedAfter(run.retried_after);
  const Result<EvaluationReport>& report = run.report;
  if (!report.ok()) return finish(verdict, FC::INTERNAL_ERROR, report.status().to_string());
  DICE_LOG(Debug) << "evaluated" << kv("slot", run.slot) << kv("seconds", report->eval_seconds)
                  << kv("phases", report->phases);
  record_report(*report, wire::task_reward_policy(task, options_.policy), std::move(findings),
                verdict);
}

}  // namespace dice
