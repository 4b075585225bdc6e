#include "cluster/slurm_query.h"

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "cluster/command.h"

namespace dice::cluster {
namespace {

std::vector<std::string> split(const std::string& line, char separator) {
  std::vector<std::string> parts;
  std::stringstream in(line);
  std::string part;
  while (std::getline(in, part, separator)) parts.push_back(part);
  if (!line.empty() && line.back() == separator) parts.emplace_back();
  return parts;
}

std::string trim(const std::string& text) {
  std::size_t first = text.find_first_not_of(" \t\r\n");
  if (first == std::string::npos) return {};
  return text.substr(first, text.find_last_not_of(" \t\r\n") - first + 1);
}

// squeue's own words for a job it has forgotten (MinJobAge passed) or never had.
bool says_unknown_job(const CommandResult& result) {
  return result.err.find("Invalid job id") != std::string::npos;
}

Status squeue_failed(const std::vector<std::string>& argv, const CommandResult& result) {
  return Status::unavailable("`" + command_line(argv) + "` failed (exit " +
                             std::to_string(result.exit_code) + "): " + trim(result.err));
}

}  // namespace

bool slurm_state_active(const std::string& state) {
  static const char* const kEnded[] = {"COMPLETED",     "CANCELLED", "FAILED",    "TIMEOUT",
                                       "NODE_FAIL",     "PREEMPTED", "BOOT_FAIL", "DEADLINE",
                                       "OUT_OF_MEMORY", "REVOKED"};
  for (const char* ended : kEnded) {
    if (state == ended) return false;
  }
  return !state.empty();
}

SlurmJobInfo parse_squeue_job(const std::string& text, const std::string& job_id) {
  std::stringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    std::vector<std::string> fields = split(trim(line), '|');
    if (fields.size() < 4 || fields[0] != job_id) continue;
    return SlurmJobInfo{true, fields[1], fields[2], fields[3]};
  }
  return {};
}

std::vector<SlurmStep> parse_squeue_steps(const std::string& text) {
  std::vector<SlurmStep> steps;
  std::stringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    std::vector<std::string> fields = split(trim(line), '|');
    if (fields.size() < 3 || fields[1] == "batch" || fields[1] == "extern") continue;
    steps.push_back(SlurmStep{fields[0], fields[1], fields[2]});
  }
  return steps;
}

Result<SlurmJobInfo> query_slurm_job(const std::string& job_id) {
  std::vector<std::string> argv = {"squeue",       "-h", "-j",         job_id,
                                   "--states=all", "-o", "%i|%T|%r|%N"};
  DICE_ASSIGN_OR_RETURN(CommandResult result, run_command(argv));
  if (result.exit_code != 0 && !says_unknown_job(result)) return squeue_failed(argv, result);
  SlurmJobInfo info = parse_squeue_job(result.out, job_id);
  if (info.known || find_on_path("sacct").empty()) return info;
  // squeue forgets a job MinJobAge (300 s by default) after it ends; accounting remembers it.
  Result<CommandResult> sacct =
      run_command({"sacct", "-n", "-X", "-P", "-j", job_id, "-o", "JobID,State,NodeList"});
  if (!sacct.ok() || sacct->exit_code != 0) return info;
  std::stringstream lines(sacct->out);
  std::string line;
  while (std::getline(lines, line)) {
    std::vector<std::string> fields = split(trim(line), '|');
    if (fields.size() < 3 || fields[0] != job_id) continue;
    // sacct says "CANCELLED by 0": the state is the first word.
    return SlurmJobInfo{true, fields[1].substr(0, fields[1].find(' ')), "None", fields[2]};
  }
  return info;
}

Result<std::vector<SlurmStep>> query_slurm_steps(const std::string& job_id) {
  std::vector<std::string> argv = {"squeue", "-h", "-s", "-j", job_id, "-o", "%i|%j|%N"};
  DICE_ASSIGN_OR_RETURN(CommandResult result, run_command(argv));
  if (result.exit_code != 0) {
    if (says_unknown_job(result)) return std::vector<SlurmStep>{};
    return squeue_failed(argv, result);
  }
  return parse_squeue_steps(result.out);
}

Status read_step_file(const std::string& path, ServiceState* service) {
  std::ifstream in(path);
  if (!in) return Status::not_found("no step file " + path);
  std::string line;
  int number = 0;
  while (std::getline(in, line)) {
    ++number;
    std::size_t space = line.find(' ');
    std::string key = line.substr(0, space);
    std::string value = space == std::string::npos ? "" : line.substr(space + 1);
    std::string where = path + ":" + std::to_string(number);
    char* end = nullptr;
    if (key == "state") {
      if (!run_state_from_name(value, &service->state)) {
        return Status::corruption(where + ": unknown step state '" + value + "'");
      }
    } else if (key == "restarts") {
      service->restarts = static_cast<int>(std::strtol(value.c_str(), &end, 10));
      if (value.empty() || *end != '\0') {
        return Status::corruption(where + ": restarts '" + value + "' is not a number");
      }
    } else if (key == "started_at") {
      service->started_at = std::strtod(value.c_str(), &end);
      if (value.empty() || *end != '\0') {
        return Status::corruption(where + ": started_at '" + value + "' is not a number");
      }
    } else if (key == "last_exit") {
      service->last_exit = value;
    } else {
      return Status::corruption(where + ": unknown key '" + key + "'");
    }
  }
  return Status::ok_status();
}

}  // namespace dice::cluster
