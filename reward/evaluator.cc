#include "reward/evaluator.h"

#include <capnp/schema.h>

#include <cstdio>
#include <random>
#include <sstream>

#include "reward/json_value.h"

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
  auto doc = JsonDocument::parse(json, "evaluate.py result");
  if (!doc.ok()) {
    report.failure = schema::FailureClass::INTERNAL_ERROR;
    report.detail = doc.status().message();
    return report;
  }
  auto root = doc->root();
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
  capnp::json::Value::Reader phases;
  if (json_member(root, "phases", &phases) && phases.isObject()) {
    for (auto field : phases.getObject()) {
      if (!field.getValue().isNumber()) continue;
      std::ostringstream one;
      one << field.getName().cStr() << "=" << field.getValue().getNumber();
      report.phases += (report.phases.empty() ? "" : " ") + one.str();
    }
  }
  capnp::json::Value::Reader findings;
  if (json_member(root, "findings", &findings) && findings.isArray()) {
    for (auto f : findings.getArray()) {
      report.findings.push_back(
          {json_string(f, "check"), json_string(f, "detail"), json_bool(f, "fatal", true), 0});
    }
  }
  return report;
}

Result<EvaluationReport> evaluate_candidate(const std::string& reference_source,
                                            const std::string& candidate_source,
                                            const std::vector<CompileOutcome>& modules,
                                            const std::vector<std::string>& kernels,
                                            const EvaluatorOptions& options) {
  const std::string nonce = random_nonce();
  SandboxSpec spec = options.sandbox;
  // The script and the built modules are copied into the scratch folder: the sandbox uid needs
  // no access to the install or cache folders, and cannot touch the cached originals.
  DICE_ASSIGN_OR_RETURN(spec.files, read_files_for_sandbox(options.script_dir, {"evaluate.py"}));
  spec.files.emplace_back("reference.py", reference_source);
  spec.files.emplace_back("candidate.py", candidate_source);
  spec.files.emplace_back("nonce", nonce + "\n");
  std::vector<std::string> module_args;
  for (const auto& m : modules) {
    DICE_ASSIGN_OR_RETURN(auto copied, read_files_for_sandbox("", {m.module_path}));
    const std::string local = "module_" + m.module_name + "_" + copied[0].first;
    spec.files.emplace_back(local, std::move(copied[0].second));
    module_args.push_back("--module");
    module_args.push_back(m.module_name + "=./" + local);
  }
  if (options.device != "cpu") spec.limit_data_not_address_space = true;
  spec.argv = {options.python, "-E",
               "-s",           "evaluate.py",
               "--reference",  "reference.py",
               "--candidate",  "candidate.py",
               "--nonce-file", "nonce",
               "--device",     options.device,
               "--trials",     std::to_string(options.trials),
               "--seed",       std::to_string(options.seed),
               "--tol-fp32",   format_double(options.tolerance.fp32),
               "--tol-fp16",   format_double(options.tolerance.fp16),
               "--tol-bf16",   format_double(options.tolerance.bf16),
               "--peak-gbps",  format_double(options.peak_gbps)};
  spec.argv.insert(spec.argv.end(), module_args.begin(), module_args.end());
  if (!kernels.empty()) {
    std::string list;
    for (const auto& k : kernels) list += (list.empty() ? "" : ",") + k;
    spec.argv.push_back("--kernels");
    spec.argv.push_back(list);
  }
  if (options.timing.enabled) {
    spec.argv.insert(spec.argv.end(),
                     {"--timing", "--timing-trials", std::to_string(options.timing.trials),
                      "--warmups", std::to_string(options.timing.warmups)});
  }
  DICE_ASSIGN_OR_RETURN(SandboxResult run, run_sandboxed(spec));
  return report_from_run(run, nonce);
}

}  // namespace dice
