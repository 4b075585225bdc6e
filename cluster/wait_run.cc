#include "cluster/wait_run.h"

#include <chrono>
#include <fstream>
#include <ostream>
#include <thread>

#include "cluster/cluster_state.h"

namespace dice::cluster {
namespace {

// Prints the complete lines of `path` after byte `*offset` and moves the offset past them.
void print_new_lines(const std::string& path, std::streamoff* offset, std::ostream& out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return;
  in.seekg(*offset);
  std::string line;
  while (std::getline(in, line)) {
    if (in.eof()) break;  // a line still being written: read it whole next time
    out << line << '\n';
    *offset = in.tellg();
  }
  out.flush();
}

const ServiceState* learner_of(const ClusterState& state) {
  for (const auto& s : state.services) {
    if (s.role == "learner") return &s;
  }
  return nullptr;
}

}  // namespace

Status wait_for_learner(const std::string& state_dir, const WaitOptions& options,
                        std::ostream& out) {
  const auto start = std::chrono::steady_clock::now();
  std::streamoff offset = 0;
  for (;;) {
    DICE_ASSIGN_OR_RETURN(ClusterState state, read_state_file(state_dir));
    if (state.backend == "slurm") {
      return Status::invalid_argument("wait follows local and ssh runs; run '" + state.run_id +
                                      "' is Slurm job " + state.slurm_job_id +
                                      " (follow it with squeue and dice-cluster logs)");
    }
    const ServiceState* learner = learner_of(state);
    if (learner == nullptr) {
      return Status::not_found("run '" + state.run_id + "' in " + state_dir + " has no learner");
    }
    if (options.follow) print_new_lines(learner->log_path, &offset, out);
    switch (learner->state) {
      case ServiceRunState::kExited:
        return Status::ok_status();
      case ServiceRunState::kFailed:
      case ServiceRunState::kStopped:
        return Status::internal(
            "the learner of run '" + state.run_id + "' ended " + run_state_name(learner->state) +
            (learner->last_exit.empty() ? "" : " (" + learner->last_exit + ")") +
            "; its log: " + learner->log_path +
            (state.stop_reason.empty() ? "" : "; the run was stopped: " + state.stop_reason));
      default:
        break;
    }
    const double waited =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (options.timeout_seconds > 0 && waited >= options.timeout_seconds) {
      return Status::timeout("the learner of run '" + state.run_id + "' still runs after " +
                             std::to_string(static_cast<int>(waited)) + " s");
    }
    std::this_thread::sleep_for(std::chrono::duration<double>(options.poll_seconds));
  }
}

}  // namespace dice::cluster
