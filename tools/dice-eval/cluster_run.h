// One attempt of an evaluation through dice's own services: `dice-cluster up CONFIG OVERRIDES`
// (an eval-only curriculum, learner.update_policy false), then `dice-cluster wait` until the
// learner ends, then `dice-cluster down`, with the services' and dice-cluster's output in the
// attempt's log file. Meanwhile a status line (progress.h) every status_interval seconds, from
// the reward log read as a secondary.
//
// Stopping: the first SIGINT/SIGTERM/SIGHUP runs `dice-cluster down` (the learner drains its
// step and logs what it has) and waits for it; a second one stops the waiting (the down goes on
// in the background). A run that passes its deadline is brought down the same way.
#pragma once

#include <chrono>
#include <iosfwd>
#include <string>
#include <vector>

#include "tools/dice-eval/progress.h"

namespace dice::eval {

// Counts SIGINT, SIGTERM and SIGHUP from now on (instead of dying of them); once one came,
// run_attempt brings its services down and starts no more.
void install_interrupt_handlers();
// How many arrived so far.
int interrupts_received();

struct ClusterRunOptions {
  std::string cluster;                 // the dice-cluster executable
  std::string config;                  // the base config file
  std::vector<std::string> overrides;  // dice-eval's, then the user's
  std::string state_dir;               // cluster.local.state_dir
  std::string reward_log;              // run.reward_log_path, read for the status lines
  std::string output_log;              // where dice-cluster's and the learner's lines go
  double status_interval = 30;         // seconds
  std::chrono::steady_clock::time_point deadline =
      std::chrono::steady_clock::time_point::max();  // --timeout
  Progress progress;  // the attempt's run id and totals; the counts are filled in as it runs
};

enum class RunEnd {
  kFinished,     // the learner ended cleanly: every phase ran
  kFailed,       // up failed, or the learner failed or was stopped from outside
  kInterrupted,  // a signal stopped it (the services were brought down)
  kAbandoned,    // a second signal: dice-eval leaves while dice-cluster down goes on
  kTimedOut,     // the deadline passed (the services were brought down)
};

struct RunOutcome {
  RunEnd end = RunEnd::kFailed;
  std::string message;  // what happened, with the log's last lines when it failed
};

// Runs (`start`: up first; else follows the run already up in state_dir) and ends the attempt.
RunOutcome run_attempt(const ClusterRunOptions& options, bool start, std::ostream& out);

}  // namespace dice::eval
