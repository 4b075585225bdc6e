// Runs a short-lived command (sbatch, squeue, scancel) and captures what it prints. The slurm
// backend talks to Slurm only through its client commands, so that it works with any Slurm
// version the cluster runs and needs no Slurm library at build time.
#pragma once

#include <string>
#include <vector>

#include "common/status.h"

namespace dice::cluster {

struct CommandResult {
  int exit_code = 0;  // the exit status; 128 + N when killed by signal N
  std::string out;    // stdout
  std::string err;    // stderr
};

// The full path of `name` found on PATH (or `name` itself when it holds a '/' and is
// executable); empty when there is none.
std::string find_on_path(const std::string& name);

// Runs argv (argv[0] looked up on PATH) to completion with stdin from /dev/null. A non-zero exit
// is a result, not an error. Errors: not-found when argv[0] is not on PATH (naming it and PATH),
// io-error when it cannot be started.
Result<CommandResult> run_command(const std::vector<std::string>& argv);

// "sbatch --parsable /x/job.sh": argv joined for messages.
std::string command_line(const std::vector<std::string>& argv);

}  // namespace dice::cluster
