#include "reward/static_check.h"

#include "common/json/fields.h"

namespace dice {

bool StaticCheckResult::has_fatal() const {
  for (const auto& f : findings) {
    if (f.fatal) return true;
  }
  return false;
}

schema::FailureClass StaticCheckResult::failure() const {
  if (syntax_error) return schema::FailureClass::SYNTAX_ERROR;
  if (has_fatal()) return schema::FailureClass::STATIC_CHECK;
  return schema::FailureClass::NONE;
}

std::string StaticCheckResult::summary() const {
  std::string out;
  for (const auto& f : findings) {
    out += f.check + (f.fatal ? " (fatal): " : ": ") + f.detail + "\n";
  }
  return out;
}

Result<StaticCheckResult> parse_static_check_output(const std::string& json) {
  DICE_ASSIGN_OR_RETURN(const boost::json::value root, parse_json(json, "static_check.py output"));
  if (!root.is_object()) return Status::corruption("static_check.py output: not a JSON object");
  StaticCheckResult result;
  result.syntax_error = !json_is_null(root, "syntax_error");
  result.kernels = json_strings(root, "kernels");
  result.launched = json_strings(root, "launched");
  result.extension = json_string(root, "extension");
  const boost::json::value* findings = json_member(root, "findings");
  if (findings != nullptr && findings->is_array()) {
    for (const auto& f : findings->get_array()) {
      StaticFinding finding;
      finding.check = json_string(f, "check");
      finding.detail = json_string(f, "detail");
      finding.fatal = json_bool(f, "fatal", true);
      finding.line = static_cast<int>(json_number(f, "line"));
      if (finding.check.empty()) {
        return Status::corruption("static_check.py output: a finding without a check name");
      }
      result.findings.push_back(std::move(finding));
    }
  }
  return result;
}

Result<StaticCheckResult> run_static_check(const std::string& source,
                                           const StaticCheckOptions& options) {
  SandboxSpec spec = parser_sandbox(options.sandbox);
  DICE_ASSIGN_OR_RETURN(
      spec.files, read_files_for_sandbox(options.script_dir, {"static_check.py", "candidate_ast.py",
                                                              "forward_calls.py"}));
  spec.files.emplace_back("candidate.py", source);
  spec.argv = {options.python, "-E", "-s", "static_check.py", "candidate.py"};
  if (!options.nonfatal.empty()) {
    std::string list;
    for (const auto& c : options.nonfatal) list += (list.empty() ? "" : ",") + c;
    spec.argv.push_back("--nonfatal");
    spec.argv.push_back(list);
  }
  DICE_ASSIGN_OR_RETURN(SandboxResult run, run_sandboxed(spec));
  if (!run.succeeded()) {
    return Status::internal("static_check.py failed (" + describe_sandbox_result(run) +
                            "): " + run.stderr_text.substr(0, 2000));
  }
  return parse_static_check_output(run.stdout_text);
}

}  // namespace dice
