#include "cluster/wait_run.h"

#include <chrono>
#include <fstream>
#include <memory>
#include <ostream>
#include <thread>

#include "cluster/cluster_state.h"
#include "cluster/live_line_writer.h"
#include "cluster/run_view.h"

namespace dice::cluster {
namespace {

// Hands `take` the complete lines of `path` after byte `*offset` and moves the offset past them.
void read_new_lines(const std::string& path, std::streamoff* offset,
                    const std::function<void(const std::string&)>& take) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return;
  in.seekg(*offset);
  std::string line;
  while (std::getline(in, line)) {
    if (in.eof()) break;  // a line still being written: read it whole next time
    take(line);
    *offset = in.tellg();
  }
}

const ServiceState* learner_of(const ClusterState& state) {
  for (const auto& s : state.services) {
    if (s.role == "learner") return &s;
  }
  return nullptr;
}

// Where the learner's log lines go: printed as they are, or read into the human view.
class Follower {
 public:
  Follower(const WaitOptions& options, std::ostream& out) : follow_(options.follow), out_(out) {
    if (follow_ == WaitOptions::Follow::kHuman) {
      writer_ = std::make_unique<LiveLineWriter>(out, options.terminal_columns);
    }
  }

  // Once, when the learner is known: where its full log is, for a person reading the view.
  void introduce(const ClusterState& state, const ServiceState& learner) {
    if (!writer_ || introduced_) return;
    introduced_ = true;
    writer_->write({{"following run '" + state.run_id + "'; the learner's full log: " +
                     learner.log_path + " (dice-cluster logs, or wait --log)"},
                    std::nullopt});
  }

  void read(const std::string& path, std::streamoff* offset) {
    if (follow_ == WaitOptions::Follow::kNone) return;
    read_new_lines(path, offset, [this](const std::string& line) {
      if (writer_) {
        writer_->write(view_.read(line));
      } else {
        out_ << line << '\n';
      }
    });
    out_.flush();
  }

  // The wait ends: the live line, if any, becomes permanent so what follows starts a new line.
  void finish() {
    if (writer_) writer_->write(view_.finish());
  }

 private:
  WaitOptions::Follow follow_;
  std::ostream& out_;
  RunView view_;
  std::unique_ptr<LiveLineWriter> writer_;  // kHuman only
  bool introduced_ = false;
};

}  // namespace

Status wait_for_learner(const std::string& state_dir, const WaitOptions& options,
                        std::ostream& out) {
  const auto start = std::chrono::steady_clock::now();
  std::streamoff offset = 0;
  Follower follower(options, out);
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
    follower.introduce(state, *learner);
    follower.read(learner->log_path, &offset);
    switch (learner->state) {
      case ServiceRunState::kExited:
        follower.finish();
        return Status::ok_status();
      case ServiceRunState::kFailed:
      case ServiceRunState::kStopped:
        follower.finish();
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
      follower.finish();
      return Status::timeout("the learner of run '" + state.run_id + "' still runs after " +
                             std::to_string(static_cast<int>(waited)) + " s");
    }
    std::this_thread::sleep_for(std::chrono::duration<double>(options.poll_seconds));
  }
}

}  // namespace dice::cluster
