#include "reward/evaluate/evaluator.h"

#include <capnp/schema.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <random>
#include <sstream>
#include <thread>

#include "common/json/fields.h"
#include "common/log.h"
#include "common/seconds_since.h"
#include "reward/evaluate/gpu_memory_watch.h"
#include "reward/run_failure.h"

namespace dice {
namespace {

constexpr const char* kResultPrefix = "DICE_EVAL_RESULT ";

std::string random_nonce() {
  std::random_device rd;
  char buf[33];
  std::snprintf(buf, sizeof(buf), "%08x%08x%08x%08x", rd(), rd(), rd(), rd());
  return buf;
}

std::string tail(const std::string& text, size_t n) {
  return text.size() <= n ? text : text.substr(text.size() - n);
}

std::string format_double(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.9g", v);
  return buf;
}

}  // namespace

schema::FailureClass failure_class_from_name(const std::string& name) {
  auto enumerants = capnp::Schema::from<schema::FailureClass>().getEnumerants();
  for (auto e : enumerants) {
    if (name == e.getProto().getName().cStr()) {
      return static_cast<schema::FailureClass>(e.getOrdinal());
    }
  }
  return schema::FailureClass::INTERNAL_ERROR;
}

std::string failure_class_name(schema::FailureClass failure) {
  for (auto e : capnp::Schema::from<schema::FailureClass>().getEnumerants()) {
    if (e.getOrdinal() == static_cast<uint16_t>(failure)) return e.getProto().getName().cStr();
  }
  return "unknown";
}

EvaluationReport report_from_run(const SandboxResult& run, const std::string& nonce) {
  EvaluationReport report;
  report.eval_seconds = run.wall_seconds;
  report.log_tail = tail(run.stderr_text, 2000);
  const std::string marker = kResultPrefix + nonce + " ";
  size_t pos = std::string::npos;
  // The last matching line wins; only lines that start with the marker count.
  for (size_t at = run.stdout_text.find(marker); at != std::string::npos;
       at = run.stdout_text.find(marker, at + 1)) {
    if (at == 0 || run.stdout_text[at - 1] == '\n') pos = at;
  }
  if (pos == std::string::npos) {
    schema::FailureClass kind = classify_sandbox_failure(run);
    report.failure = kind == schema::FailureClass::NONE ? schema::FailureClass::CRASHED : kind;
    report.detail = "evaluation ended without a result: " + describe_sandbox_result(run);
    return report;
  }
  size_t end = run.stdout_text.find('\n', pos);
  std::string json = run.stdout_text.substr(pos + marker.size(), end == std::string::npos
                                                                     ? std::string::npos
                                                                     : end - pos - marker.size());
  auto doc = parse_json(json, "judge.py result");
  if (!doc.ok()) {
    report.failure = schema::FailureClass::INTERNAL_ERROR;
    report.detail = doc.status().message();
    return report;
  }
  const boost::json::value& root = doc.value();
  report.failure = failure_class_from_name(json_string(root, "failure", "internalError"));
  report.detail = json_string(root, "detail");
  report.correct = json_bool(root, "correct") && report.failure == schema::FailureClass::NONE;
  report.trials = static_cast<int>(json_number(root, "trials"));
  report.max_abs_error = json_number(root, "max_abs_error");
  report.kernel_ms_mean = json_number(root, "kernel_ms_mean");
  report.kernel_ms_std = json_number(root, "kernel_ms_std");
  report.reference_ms_mean = json_number(root, "reference_ms_mean");
  report.reference_ms_std = json_number(root, "reference_ms_std");
  report.timing_trials = static_cast<int>(json_number(root, "timing_trials"));
  report.speedup = json_number(root, "speedup");
  report.judge_job = static_cast<int>(json_number(root, "judge_job"));
  report.judge_serves_again = json_bool(root, "serves_again");
  const boost::json::value* phases = json_member(root, "phases");
  if (phases != nullptr && phases->is_object()) {
    for (const auto& field : phases->get_object()) {
      if (!field.value().is_number()) continue;
      std::ostringstream one;
      one << std::string(field.key()) << "=" << json_as_number(field.value());
      report.phases += (report.phases.empty() ? "" : " ") + one.str();
    }
  }
  const boost::json::value* findings = json_member(root, "findings");
  if (findings != nullptr && findings->is_array()) {
    for (const auto& f : findings->get_array()) {
      report.findings.push_back(
          {json_string(f, "check"), json_string(f, "detail"), json_bool(f, "fatal", true), 0});
    }
  }
  return report;
}

namespace {

constexpr const char* kReadyLine = "DICE_EVAL_READY";
constexpr const char* kLaunchProbeFile = "dice_launch_probe.so";
constexpr const char* kGuardAllocFile = "dice_guard_alloc.so";
// Printed with the nonce by a correct candidate's process about to be timed; it then waits for a
// line on stdin (or its end) before timing.
constexpr const char* kTimingTurnPrefix = "DICE_TIMING_TURN ";
// Printed with the nonce by a judge that has sent its runner the exit and times the reference
// next: it waits for a line on stdin (or its end), sent once every process of the runner's
// sandbox is gone, so no code of the candidate can load the GPU while the reference is timed.
constexpr const char* kRunnerDonePrefix = "DICE_RUNNER_DONE ";

using SteadyClock = std::chrono::steady_clock;

// What waiting for a process that takes turns at its GPU produced: the run, how long it waited
// for the GPU alone (not counted against its timeout, nor in its evaluation's seconds), and a
// finding when that turn did not come in time.
struct TurnTakingRun {
  SandboxResult run;
  double turn_wait_seconds = 0;
  std::vector<StaticFinding> findings;
};

// Follows the judge (its job sent, stdin left open) to its result line, answering what it asks on
// the way: with `turn`, the GPU alone when it asks to be timed (the turn goes from shared to
// exclusive, held until the job ends); when it says its runner is done, `end_runner` ends the
// runner's sandbox and the judge is told once it is gone. A judge that serves again (its result
// says so) stays alive, and the run holds its result line and this job's stderr; any other judge
// is waited for to its end (killed at the timeout).
TurnTakingRun follow_judge(SandboxProcess& judge, const std::string& nonce,
                           const EvaluatorOptions& options, GpuTurn* turn,
                           const std::function<void()>& end_runner, bool* serves_again) {
  TurnTakingRun out;
  *serves_again = false;
  const auto start = SteadyClock::now();
  const double timeout = options.sandbox.timeout_seconds;
  auto left = [&] {
    return std::max(0.0, timeout - (seconds_since(start) - out.turn_wait_seconds));
  };
  const std::string turn_line = kTimingTurnPrefix + nonce;
  const std::string done_line = kRunnerDonePrefix + nonce;
  const std::string result_prefix = kResultPrefix + nonce + " ";
  std::string result_line;
  bool timed_out = false;
  for (;;) {
    auto line = judge.next_line_starting({turn_line, done_line, result_prefix}, left());
    if (!line.ok()) {
      timed_out = line.status().code() == StatusCode::kTimeout;
      break;
    }
    if (*line == turn_line) {
      const auto asked_at = SteadyClock::now();
      if (turn != nullptr &&
          !turn->take_alone(GpuTurns::Patience(options.timing.turn_wait_seconds))) {
        out.findings.push_back({"timing-not-exclusive",
                                "the GPU did not come free within " +
                                    format_double(options.timing.turn_wait_seconds) +
                                    " s: timed while other candidates ran on it",
                                false, 0});
      }
      out.turn_wait_seconds += seconds_since(asked_at);
      (void)judge.send_input("go\n", /*keep_open=*/true);
    } else if (*line == done_line) {
      end_runner();
      (void)judge.send_input("gone\n", /*keep_open=*/true);
    } else if (line->compare(0, result_prefix.size(), result_prefix) == 0) {
      result_line = *line;
      break;
    }
  }
  if (!result_line.empty()) {
    auto doc = parse_json(result_line.substr(result_prefix.size()), "judge.py result");
    *serves_again = doc.ok() && json_bool(doc.value(), "serves_again");
  }
  if (*serves_again) {
    out.run.exit_code = 0;
    out.run.wall_seconds = seconds_since(start);
    out.run.stderr_text = judge.take_stderr();
  } else {
    if (timed_out) judge.kill_now();
    out.run = judge.wait(timed_out ? 5 : std::max(1.0, left()));
    out.run.timed_out = out.run.timed_out || timed_out;
  }
  if (!result_line.empty()) out.run.stdout_text = result_line + "\n" + out.run.stdout_text;
  return out;
}

// A judge taken to come back to its EvaluatorPrestart (EvaluatorOptions::judge_jobs): given back
// ready for more work, or, on every other way out, as gone, so that a successor starts.
class JudgeLoan {
 public:
  JudgeLoan(EvaluatorPrestart* prestart, const SandboxSpec& spec)
      : prestart_(prestart), spec_(spec) {}
  ~JudgeLoan() {
    if (prestart_ != nullptr) prestart_->give_back(spec_, nullptr);
  }
  JudgeLoan(const JudgeLoan&) = delete;
  JudgeLoan& operator=(const JudgeLoan&) = delete;
  void give_back(std::unique_ptr<SandboxProcess> judge) {
    if (prestart_ != nullptr) prestart_->give_back(spec_, std::move(judge));
    prestart_ = nullptr;
  }

 private:
  EvaluatorPrestart* prestart_;
  const SandboxSpec& spec_;
};

// What makes two evaluation processes interchangeable before their work arrives: everything of
// the spec but the timeout, which applies from SandboxProcess::wait().
std::string prestart_key(const SandboxSpec& spec) {
  std::ostringstream key;
  for (const auto& a : spec.argv) key << a << '\0';
  key << '\1';
  for (const auto& e : spec.env) key << e << '\0';
  key << '\1';
  for (const auto& [name, contents] : spec.files) key << name << '\0' << contents << '\0';
  key << '\1' << spec.workdir << '\0' << spec.scratch_root << '\0' << spec.memory_limit_mb << ' '
      << spec.limit_data_not_address_space << ' ' << spec.cpu_time_seconds << ' '
      << spec.max_output_mb << ' ' << spec.max_processes << ' ' << spec.max_open_files << ' '
      << spec.isolate << spec.allow_network << ' ' << spec.uid << ' ' << spec.gid << ' '
      << spec.input_pipe << ' ' << static_cast<int>(spec.cgroups) << ' ' << spec.tmpfs_size_mb
      << '\1';
  for (const auto& p : spec.read_only_paths) key << p << '\0';
  key << '\1';
  for (int gpu : spec.gpu_devices) key << gpu << ' ';
  return key.str();
}

// The service's own failure (not the candidate's): internalError with the process's stderr.
EvaluationReport service_failure(std::string detail, const SandboxResult& run) {
  EvaluationReport report;
  report.failure = schema::FailureClass::INTERNAL_ERROR;
  report.detail = std::move(detail);
  report.log_tail = tail(run.stderr_text, 2000);
  return report;
}

}  // namespace

Status kernel_check_available(KernelCheck check, const std::string& launch_probe) {
  if (check != KernelCheck::kCupti || !launch_probe.empty()) return Status::ok_status();
  return Status::invalid_argument(
      "reward.kernel_check: cupti needs dice_launch_probe.so, which this build lacks: CUPTI "
      "(cupti.h and libcupti) was not found when it was configured (set DICE_CUPTI_ROOT and "
      "build again, or use kernel_check: profiler)");
}

KernelCheck resolve_kernel_check(KernelCheck check, const std::string& launch_probe) {
  if (check != KernelCheck::kAuto) return check;
  return launch_probe.empty() ? KernelCheck::kProfiler : KernelCheck::kCupti;
}

EvaluatorPrestart::EvaluatorPrestart(int ahead) : ahead_(std::max(1, ahead)) {}

EvaluatorPrestart::~EvaluatorPrestart() = default;

Result<std::unique_ptr<SandboxProcess>> EvaluatorPrestart::take(const SandboxSpec& spec,
                                                                bool comes_back) {
  const std::string key = prestart_key(spec);
  std::unique_ptr<SandboxProcess> taken;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it =
        std::find_if(ready_.begin(), ready_.end(), [&](const Ready& r) { return r.key == key; });
    if (it == ready_.end()) {
      // Processes of a third spec are of no use any more (the options changed): killed.
      if (ready_.size() >= 2) ready_.pop_back();
      ready_.push_front(Ready{key, {}, 0});
      it = ready_.begin();
    }
    if (!it->processes.empty()) {
      taken = std::move(it->processes.front());
      it->processes.pop_front();
      ++warm_takes_;
    }
    if (comes_back) ++it->out;
  }
  if (!taken) {
    auto started = SandboxProcess::start(spec);
    if (!started.ok()) {
      if (comes_back) give_back(spec, nullptr);
      return started.status();
    }
    taken = std::move(started).value();
  }
  start_successors(spec, key);
  return taken;
}

void EvaluatorPrestart::start_successors(const SandboxSpec& spec, const std::string& key) {
  // A start returns once the child is forked; a failure shows again, and is reported, at a
  // later take.
  for (;;) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      auto it =
          std::find_if(ready_.begin(), ready_.end(), [&](const Ready& r) { return r.key == key; });
      if (it == ready_.end() || static_cast<int>(it->processes.size()) + it->out >= ahead_) {
        return;
      }
    }
    auto next = SandboxProcess::start(spec);
    if (!next.ok()) return;
    std::lock_guard<std::mutex> lock(mutex_);
    auto it =
        std::find_if(ready_.begin(), ready_.end(), [&](const Ready& r) { return r.key == key; });
    if (it == ready_.end() || static_cast<int>(it->processes.size()) + it->out >= ahead_) return;
    it->processes.push_back(std::move(next).value());
  }
}

void EvaluatorPrestart::give_back(const SandboxSpec& spec,
                                  std::unique_ptr<SandboxProcess> process) {
  const std::string key = prestart_key(spec);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it =
        std::find_if(ready_.begin(), ready_.end(), [&](const Ready& r) { return r.key == key; });
    if (it == ready_.end()) return;  // the options changed meanwhile: the process is killed
    it->out = std::max(0, it->out - 1);
    if (process) {
      it->processes.push_front(std::move(process));
      ++given_back_;
      return;
    }
  }
  start_successors(spec, key);
}

int EvaluatorPrestart::warm_takes() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return warm_takes_;
}

int EvaluatorPrestart::given_back() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return given_back_;
}

int EvaluatorPrestart::ready() const {
  std::lock_guard<std::mutex> lock(mutex_);
  int n = 0;
  for (const auto& r : ready_) n += static_cast<int>(r.processes.size());
  return n;
}

namespace {

// A started process for `spec`, ready for its job: from `prestart` when given (one that died
// while it waited is replaced by a fresh one: no reason to fail this candidate), else new. A
// process that cannot get ready is the service's problem (python or torch broken, the GPU gone)
// and gives `failed` an internalError report; a sandbox that could not be set up gives it
// sandboxUnavailable (the candidate was not run).
std::unique_ptr<SandboxProcess> ready_process(
    const SandboxSpec& spec, const char* what, EvaluatorPrestart* prestart,
    const std::vector<std::pair<std::string, std::string>>& files, EvaluationReport* failed,
    bool comes_back = false) {
  std::unique_ptr<SandboxProcess> process;
  Status ready = Status::unavailable("not started");
  if (prestart != nullptr) {
    auto taken = prestart->take(spec, comes_back);
    if (taken.ok()) {
      process = std::move(taken).value();
      ready = process->add_files(files);
      if (ready.ok()) ready = process->wait_for_line(kReadyLine, spec.timeout_seconds);
      if (!ready.ok()) {
        DICE_LOG(Warn) << "evaluator: a " << what << " started ahead did not get ready; starting "
                       << "another" << kv("stderr", tail(process->wait(1).stderr_text, 300));
        process.reset();
      }
    }
  }
  if (!process) {
    auto started = SandboxProcess::start(spec);
    if (!started.ok()) {
      *failed = service_failure(
          std::string("the ") + what + " did not start: " + started.status().to_string(),
          SandboxResult{});
      return nullptr;
    }
    process = std::move(started).value();
    ready = process->add_files(files);
    if (ready.ok()) ready = process->wait_for_line(kReadyLine, spec.timeout_seconds);
  }
  if (ready.ok()) return process;
  const SandboxResult run = process->wait(1);
  if (run.unavailable) {
    failed->failure = schema::FailureClass::SANDBOX_UNAVAILABLE;
    failed->detail = std::string("the ") + what +
                     "'s sandbox could not be set up, so nothing ran: " + run.unavailable_reason;
    return nullptr;
  }
  *failed =
      service_failure(std::string("the ") + what + " did not start: " + ready.message() + " (" +
                          describe_sandbox_result(run) + "): " + tail(run.stderr_text, 1000),
                      run);
  return nullptr;
}

// The end of a run's stderr, under a heading, for a report's log tail.
std::string stderr_tail(const char* heading, const SandboxResult& run, size_t n) {
  if (run.stderr_text.empty()) return "";
  return std::string("[") + heading + "]\n" + tail(run.stderr_text, n) + "\n";
}

// The judge's and the runner's sandboxes: the options' limits, each with its scripts and command.
Status evaluation_specs(const EvaluatorOptions& options, SandboxSpec* judge_spec,
                        SandboxSpec* runner_spec) {
  // Two processes of one kind of sandbox, each with its scripts copied into its scratch folder
  // (the sandbox uid needs no access to the install folder), each waiting for its job on stdin.
  SandboxSpec base = options.sandbox;
  if (options.device != "cpu") base.limit_data_not_address_space = true;
  base.input_pipe = true;
  *judge_spec = base;
  *runner_spec = base;
  // The judge makes the memfds that carry tensors both ways (python/channel.py), and a file
  // grows only up to its maker's RLIMIT_FSIZE (max_output_mb): the judge's is as large as its
  // memory limit (it runs no candidate code); the runner's stays small, so candidate code
  // cannot fill a disk.
  if (judge_spec->memory_limit_mb > judge_spec->max_output_mb) {
    judge_spec->max_output_mb = judge_spec->memory_limit_mb;
  }
  DICE_ASSIGN_OR_RETURN(
      judge_spec->files,
      read_files_for_sandbox(options.script_dir,
                             {"judge.py", "channel.py", "compare.py", "elf_dynamic.py",
                              "kernel_check.py", "module_imports.py", "timed_calls.py"}));
  DICE_ASSIGN_OR_RETURN(
      runner_spec->files,
      read_files_for_sandbox(options.script_dir,
                             {"runner.py", "channel.py", "cpp_extension_stand_in.py",
                              "timed_calls.py", "shared_poison.py", "guard_memory.py"}));
  judge_spec->argv = {options.python,
                      "-E",
                      "-s",
                      "judge.py",
                      "--job-from-stdin",
                      "--device",
                      options.device,
                      "--serve-jobs",
                      std::to_string(std::max(1, options.judge_jobs))};
  // faulthandler: a candidate that crashes its process (a segfault in its C++) leaves the
  // Python stack in the runner's stderr, which the verdict's log excerpt quotes.
  runner_spec->argv = {
      options.python,     "-E",       "-s",          "-X", "faulthandler", "runner.py",
      "--job-from-stdin", "--device", options.device};
  const bool cupti =
      resolve_kernel_check(options.kernel_check, options.launch_probe) == KernelCheck::kCupti;
  if (cupti) {
    // The probe travels like the scripts; the runner loads it while it starts, before any
    // candidate code, and skips warming the profiler.
    DICE_RETURN_IF_ERROR(kernel_check_available(options.kernel_check, options.launch_probe));
    DICE_ASSIGN_OR_RETURN(auto probe, read_files_for_sandbox("", {options.launch_probe}));
    runner_spec->files.emplace_back(kLaunchProbeFile, std::move(probe[0].second));
    runner_spec->argv.insert(runner_spec->argv.end(), {"--launch-probe", kLaunchProbeFile});
  }
  if (options.device != "cpu") {
    // The allocator that puts guard bytes around every tensor of the candidate's process
    // (python/guard_memory.py); without it on a GPU the runner's evaluations fail closed.
    if (options.guard_alloc.empty()) {
      return Status::invalid_argument("the evaluator needs dice_guard_alloc.so on a GPU");
    }
    DICE_ASSIGN_OR_RETURN(auto guard, read_files_for_sandbox("", {options.guard_alloc}));
    runner_spec->files.emplace_back(kGuardAllocFile, std::move(guard[0].second));
    runner_spec->argv.insert(runner_spec->argv.end(), {"--guard-alloc", kGuardAllocFile});
  }
  return Status::ok_status();
}

}  // namespace

Status judge_arguments(const EvaluationJob& job, const EvaluatorOptions& options, bool take_turns,
                       std::vector<std::pair<std::string, std::string>>* runner_files,
                       std::vector<std::string>* args) {
  *args = {"--reference",
           "reference.py",
           "--runner-candidate",
           "candidate.py",
           "--nonce-file",
           "nonce",
           "--device",
           options.device,
           "--trials",
           std::to_string(options.trials),
           "--seed",
           std::to_string(options.seed),
           "--tol-fp32",
           format_double(options.tolerance.fp32),
           "--tol-fp16",
           format_double(options.tolerance.fp16),
           "--tol-bf16",
           format_double(options.tolerance.bf16),
           "--peak-gbps",
           format_double(options.peak_gbps),
           "--answer-seconds",
           format_double(options.sandbox.timeout_seconds)};
  for (const auto& m : job.modules) {
    DICE_ASSIGN_OR_RETURN(auto copied, read_files_for_sandbox("", {m.module_path}));
    const std::string local = "module_" + m.module_name + "_" + copied[0].first;
    runner_files->emplace_back(local, std::move(copied[0].second));
    args->push_back("--runner-module");
    args->push_back(m.module_name + "=./" + local);
  }
  if (!job.kernels.empty()) {
    std::string list;
    for (const auto& k : job.kernels) list += (list.empty() ? "" : ",") + k;
    args->push_back("--kernels");
    args->push_back(list);
  }
  for (const auto& variant : job.shape_variants) {
    args->insert(args->end(), {"--shape-variant", variant});
  }
  if (options.timing.enabled && options.timed) {
    args->insert(args->end(), {"--timing", "--timing-trials", std::to_string(options.timing.trials),
                               "--warmups", std::to_string(options.timing.warmups)});
  }
  if (take_turns && options.timed) args->push_back("--timing-turn");
  args->insert(args->end(), {"--libraries", config::enum_to_name(options.libraries)});
  return Status::ok_status();
}

namespace {

// Says once per process what keeps the GPU memory of evaluations unbounded: a reward worker
// without NVML, or one whose NVML numbers processes otherwise than its /proc, would otherwise
// log it for every candidate.
void warn_once_unbounded(const std::string& why) {
  static std::once_flag said;
  std::call_once(said, [&] {
    DICE_LOG(Warn) << "evaluator: GPU memory per evaluation is not bounded"
                   << kv("why", why.substr(0, 300));
  });
}

// The watch over the GPU memory of the runner's process tree (gpu_memory_watch.h), or null where
// none applies: no bound asked for, no GPU in the run (unless a test passes its own reader), or no
// NVML to read (said once in the log). Over its budget the runner is killed at once.
std::unique_ptr<GpuMemoryWatch> watch_gpu_memory(const EvaluatorOptions& options,
                                                 SandboxProcess& runner) {
  if (options.gpu_memory_mb < 0) return nullptr;
  std::shared_ptr<GpuMemoryReader> reader = options.gpu_memory_reader;
  if (!reader) {
    if (options.sandbox.gpu_devices.empty()) return nullptr;
    auto nvml = nvml_memory_reader();
    if (!nvml.ok()) {
      warn_once_unbounded(nvml.status().message());
      return nullptr;
    }
    reader = *nvml;
  }
  GpuMemoryWatchOptions watch;
  watch.ordinal = options.sandbox.gpu_devices.empty() ? 0 : options.sandbox.gpu_devices.front();
  if (options.gpu_memory_mb > 0) {
    watch.budget_bytes = static_cast<std::uint64_t>(options.gpu_memory_mb) << 20;
  } else {
    auto total = reader->total_memory(watch.ordinal);
    if (!total.ok()) {
      warn_once_unbounded(total.status().message());
      return nullptr;
    }
    watch.budget_bytes = default_gpu_memory_budget(*total, options.slots_on_gpu);
  }
  return std::make_unique<GpuMemoryWatch>(std::move(reader), runner.pid(), watch,
                                          [&runner] { runner.kill_now(); });
}

// A runner tree found over its GPU memory budget is the candidate's resourceLimit, whatever the
// judge made of the runner's end. A watch that never saw the tree bounded nothing: said once.
void apply_gpu_memory_watch(const GpuMemoryWatch& watch, EvaluationReport* report) {
  if (watch.over_budget()) {
    const std::string detail = "the candidate's processes " + watch.detail();
    report->failure = schema::FailureClass::RESOURCE_LIMIT;
    report->correct = false;
    report->detail = detail;
    report->findings.push_back({"gpu-memory-over-budget", detail, true, 0});
  } else if (!watch.saw_the_tree()) {
    warn_once_unbounded(watch.failed_readings() > 0
                            ? watch.last_error()
                            : "the driver listed no process of a runner (its pids are not this "
                              "worker's: run the reward worker in the host's PID namespace)");
  }
}

// One judging of the candidate. Its turn at the GPU: shared with the other slots' evaluations,
// or (`alone`) the GPU to itself from the job's start to the end; `had_company` (if not null)
// says whether another evaluation held a turn beside it.
Result<EvaluationReport> judge_in_turn(const EvaluationJob& job, const EvaluatorOptions& options,
                                       EvaluatorPrestart* prestart, bool alone, bool* had_company) {
  SandboxSpec judge_spec, runner_spec;
  DICE_RETURN_IF_ERROR(evaluation_specs(options, &judge_spec, &runner_spec));

  // The runner's files: the candidate and its built modules (copies: the sandbox uid cannot touch
  // the cached originals). The judge's: the reference and the nonce.
  std::vector<std::pair<std::string, std::string>> runner_files = {
      {"candidate.py", job.candidate_source}};
  const std::string nonce = random_nonce();
  std::vector<std::pair<std::string, std::string>> judge_files = {
      {"reference.py", job.reference_source}, {"nonce", nonce + "\n"}};
  // The judge asks for the GPU alone before it times (a line on its stdout, answered here).
  const bool take_turns =
      options.timing.enabled && options.timing.exclusive && options.gpu_turns != nullptr;
  std::vector<std::string> args;
  DICE_RETURN_IF_ERROR(judge_arguments(job, options, take_turns, &runner_files, &args));
  // The judge reads each built module's imports before the runner loads it
  // (python/module_imports.py): the same copies, under the same names.
  judge_files.insert(judge_files.end(), runner_files.begin() + 1, runner_files.end());

  EvaluationReport failed;
  std::unique_ptr<SandboxProcess> runner =
      ready_process(runner_spec, "runner", prestart, runner_files, &failed);
  if (!runner) return failed;
  // A judge that serves job after job comes from, and goes back to, the prestart.
  const bool reuse_judge = prestart != nullptr && options.judge_jobs > 1;
  JudgeLoan judge_loan(reuse_judge ? prestart : nullptr, judge_spec);
  std::unique_ptr<SandboxProcess> judge =
      ready_process(judge_spec, "judge", prestart, judge_files, &failed, reuse_judge);
  if (!judge) return failed;
  // From here the runner may be given candidate code: its GPU memory is watched from outside.
  std::unique_ptr<GpuMemoryWatch> memory_watch = watch_gpu_memory(options, *runner);
  // A cancel from the learner kills both now (their waits below then return); ended before the
  // processes are destroyed.
  Cancellation::Registration killed_on_cancel = on_cancel(options.cancellation, [&] {
    runner->kill_now();
    judge->kill_now();
  });

  // The channel: one end to each, with its job. Closed here once sent: the two then hold the
  // only ends, so either one's death ends the other's reads.
  int channel[2];
  if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, channel) != 0) {
    return Status::io_error(std::string("evaluator: socketpair: ") + std::strerror(errno));
  }
  Status runner_sent = runner->send_input("channel\n", /*keep_open=*/false, channel[1]);
  close(channel[1]);
  // Arguments NUL-separated (no escaping needed; none holds a newline), then a newline; stdin
  // stays open for the timing turn's reply when there is one.
  std::string job_line;
  for (const auto& a : args) job_line += a + '\0';
  job_line += '\n';
  // The candidate runs on the GPU from here: alongside other candidates' checks, never alongside
  // a timing (which waits for the shared turns to end, and holds new ones back).
  GpuTurn turn(options.gpu_turns);
  const GpuTurns::Patience patience(options.timing.turn_wait_seconds);
  if (alone) {
    if (!turn.take_alone(patience)) {
      return Status::unavailable("the GPU did not come free within " +
                                 format_double(options.timing.turn_wait_seconds) + " s");
    }
  } else if (!turn.share(patience)) {
    DICE_LOG(Debug) << "evaluator: no shared turn at the GPU in time; checking without one";
  }
  const auto sent_at = SteadyClock::now();
  // The judge reads stdin for its turn, for the runner's end and for its next job.
  Status sent = judge->send_input(job_line, /*keep_open=*/true, channel[0]);
  close(channel[0]);
  // The runner's output is drained while the judge works (a full pipe would stall it); it is
  // read for the log only, never for a result.
  SandboxResult runner_run;
  std::thread runner_waiter([&] { runner_run = runner->wait(options.sandbox.timeout_seconds); });
  // Kills the runner's sandbox and returns once it is reaped: an isolated run's init takes every
  // process of its PID namespace with it, and the GPU contexts of those processes with them.
  auto end_runner = [&] {
    runner->kill_now();
    if (runner_waiter.joinable()) runner_waiter.join();
  };
  TurnTakingRun waited;
  bool serves_again = false;
  if (sent.ok()) {
    waited = follow_judge(*judge, nonce, options, take_turns ? &turn : nullptr, end_runner,
                          &serves_again);
  } else {
    judge->kill_now();
    waited.run = judge->wait(5);
  }
  // The judge has its verdict (or died): the runner has nothing left to do.
  end_runner();
  if (memory_watch) memory_watch->stop();
  const SandboxResult& run = waited.run;
  if (!sent.ok() && run.stdout_text.find(kResultPrefix) == std::string::npos) {
    return service_failure("the judge did not take its work: " + sent.message(), run);
  }
  if (!runner_sent.ok()) {
    DICE_LOG(Warn) << "evaluator: the runner did not take its channel"
                   << kv("why", runner_sent.message());
  }
  EvaluationReport report = report_from_run(run, nonce);
  // A runner that a limit ended mid-request: the candidate's timeout or resourceLimit, not a crash.
  report.failure = runner_end_failure(report.failure, report.detail, runner_run);
  if (report.failure == schema::FailureClass::TIMEOUT && runner_run.timed_out) {
    report.detail = "evaluation ended without a result: the candidate's process " +
                    describe_sandbox_result(runner_run) + " (" + report.detail + ")";
  }
  if (memory_watch) apply_gpu_memory_watch(*memory_watch, &report);
  report.log_tail = stderr_tail("runner", runner_run, 1500) + stderr_tail("judge", run, 1000);
  if (take_turns) {
    report.eval_seconds = seconds_since(sent_at) - waited.turn_wait_seconds;
    report.findings.insert(report.findings.end(), waited.findings.begin(), waited.findings.end());
  }
  if (had_company != nullptr) *had_company = turn.had_company();
  // Back to the prestart once no cancel can reach it any more; a judge a cancel reached is gone.
  killed_on_cancel = Cancellation::Registration();
  const bool cancelled = options.cancellation != nullptr && options.cancellation->cancelled();
  if (serves_again && !cancelled) judge_loan.give_back(std::move(judge));
  return report;
}

}  // namespace

bool a_neighbour_can_cause(schema::FailureClass failure) {
  using FC = schema::FailureClass;
  switch (failure) {
    case FC::RUNTIME_ERROR:   // CUDA out of memory, a cudaMalloc's invalid argument
    case FC::IMPORT_ERROR:    // the same while ModelNew is built or moved to the GPU
    case FC::CRASHED:         // a process ended from outside
    case FC::TIMEOUT:         // an endless kernel beside it takes the GPU's time
    case FC::RESOURCE_LIMIT:  // the judge's own out-of-memory is read as the candidate's
      return true;
    default:  // what the candidate's own code and outputs decide: compile, values, anti-cheat
      return false;
  }
}

Result<EvaluationReport> evaluate_candidate(const EvaluationJob& job,
                                            const EvaluatorOptions& options,
                                            EvaluatorPrestart* prestart) {
  bool had_company = false;
  Result<EvaluationReport> first = judge_in_turn(job, options, prestart, false, &had_company);
  const bool cancelled = options.cancellation != nullptr && options.cancellation->cancelled();
  if (cancelled || !first.ok() || !options.confirm_failures_alone || options.gpu_turns == nullptr ||
      !had_company || first->correct || !a_neighbour_can_cause(first->failure)) {
    return first;
  }
  const std::string first_class = failure_class_name(first->failure);
  DICE_LOG(Info) << "evaluator: judging again with the GPU alone" << kv("first", first_class)
                 << kv("detail", first->detail.substr(0, 200));
  Result<EvaluationReport> again = judge_in_turn(job, options, nullptr, true, nullptr);
  if (!again.ok()) {
    // No turn alone came (a neighbour holds the GPU past the patience): the first verdict
    // stands, saying so.
    first->findings.push_back({"not-confirmed-alone",
                               "ended " + first_class + " beside other evaluations; " +
                                   again.status().message() + " to judge it again alone",
                               false, 0});
    return first;
  }
  again->findings.push_back(
      {"confirmed-alone",
       "first judged beside other evaluations at its GPU: " + first_class +
           (first->detail.empty() ? "" : " (" + first->detail.substr(0, 300) + ")") +
           "; this verdict is from a second judging with the GPU to itself",
       false, 0});
  again->eval_seconds += first->eval_seconds;
  return again;
}

}  // namespace dice
