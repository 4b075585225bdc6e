// `dice-cluster wait`: blocks until a local (or ssh) run's learner has ended, following its log
// meanwhile (every new line of learner-0's log is printed as it lands: the step lines with their
// rates and ETA), so a script can run stages one after another (tools/up's learning run).
#pragma once

#include <iosfwd>
#include <string>

#include "common/status.h"

namespace dice::cluster {

struct WaitOptions {
  // Give up after this long (the run goes on). 0: no limit. Default: 0
  double timeout_seconds = 0;
  // Seconds between looks at the state file and the log. Default: 1
  double poll_seconds = 1.0;
  // Print the learner's new log lines. Default: true
  bool follow = true;
};

// OK when the learner exited with status 0 (the run finished or was stopped cleanly); Internal
// naming its last exit when it failed (gave up after restarts) or was stopped by `down`; Timeout
// after timeout_seconds; NotFound without a state file or a learner in it; InvalidArgument for a
// Slurm run (follow it with `squeue` and `dice-cluster logs`).
Status wait_for_learner(const std::string& state_dir, const WaitOptions& options,
                        std::ostream& out);

}  // namespace dice::cluster
