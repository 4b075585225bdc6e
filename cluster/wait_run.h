// `dice-cluster wait`: blocks until a local (or ssh) run's learner has ended, following its log
// meanwhile, so a script can run stages one after another (tools/up's learning run). The log is
// followed either as it is (every new line of the learner's log as it lands) or, for a person at
// a terminal, as the human view of cluster/run_view.h (a live progress line per phase, a row per
// RL step, evaluation tables, warnings and errors).
#pragma once

#include <functional>
#include <iosfwd>
#include <string>

#include "common/status.h"

namespace dice::cluster {

struct WaitOptions {
  // Give up after this long (the run goes on). 0: no limit. Default: 0
  double timeout_seconds = 0;
  // Seconds between looks at the state file and the log. Default: 1
  double poll_seconds = 1.0;
  enum class Follow {
    kNone,   // print nothing while waiting
    kLog,    // print the learner's new log lines as they are
    kHuman,  // print the human view (cluster/run_view.h) for a terminal
  };
  // How the learner's log is followed. Default: kLog
  Follow follow = Follow::kLog;
  // kHuman: the terminal's width in columns when asked (the live line is cut to it). Default:
  // empty (80)
  std::function<int()> terminal_columns;
};

// OK when the learner exited with status 0 (the run finished or was stopped cleanly); Internal
// naming its last exit when it failed (gave up after restarts) or was stopped by `down`; Timeout
// after timeout_seconds; NotFound without a state file or a learner in it; InvalidArgument for a
// Slurm run (follow it with `squeue` and `dice-cluster logs`).
Status wait_for_learner(const std::string& state_dir, const WaitOptions& options,
                        std::ostream& out);

}  // namespace dice::cluster
