// dice-cluster: starts, inspects and stops the services of a dice run.
//
//   dice-cluster up CONFIG [KEY=VALUE ...] [--dry-run]
//   dice-cluster status (--state-dir DIR | --config CONFIG [KEY=VALUE ...])
//   dice-cluster logs [SERVICE] [-n LINES] (--state-dir DIR | --config CONFIG [KEY=VALUE ...])
//   dice-cluster down (--state-dir DIR | --config CONFIG [KEY=VALUE ...])
//   dice-cluster wait [--timeout SECONDS] [--log]
//                     (--state-dir DIR | --config CONFIG [KEY=VALUE ...])
//
// up: loads CONFIG and starts every service. cluster.backend local: a supervisor daemon runs them
//   as child processes (cluster/supervisor.h); ssh: the same supervisor runs one ssh client per
//   service, which runs it on its node (cluster/ssh_backend.h); slurm: one sbatch job with a step
//   per service (cluster/slurm_backend.h). Waits until each is launched and prints where state
//   and logs are.
// status: one line per service (node, pid or Slurm step, state, restarts, uptime, last exit).
//   logs: the last lines of each service's log (SERVICE is a name like rollout-0, a role,
//   "supervisor" for a local run's supervisor, or "batch" for a Slurm job's batch output).
//   down: stops the run (local: SIGTERM, then SIGKILL; ssh: the same, sent to each service on its
//   node over ssh; slurm: scancel) and waits until none of its processes (or its Slurm job)
//   remain. They follow the backend recorded in the state file.
// wait: blocks until the run's learner has ended (cluster/wait_run.h); exit 0 when it exited
//   cleanly, 1 when it failed or the timeout passed. Meanwhile, on a terminal, it shows the run
//   for a person (cluster/run_view.h: a live progress line per phase, a row per RL step,
//   evaluation tables, warnings and errors); on a pipe or a file, or with --log, it prints the
//   learner's log lines as they come.
// --dry-run prints what up would run (local: each service's command line; ssh: each service's ssh
// command; slurm: the sbatch script) and starts nothing.
// Exit status: 0 ok; 1 the operation failed (a timeout, an I/O error); 2 bad usage, a bad config or
// override, a missing executable, or no run in the state dir.
#include <sys/ioctl.h>
#include <unistd.h>

#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include "cluster/local_backend.h"
#include "cluster/process.h"
#include "cluster/remote_commands.h"
#include "cluster/service_plan.h"
#include "cluster/slurm_backend.h"
#include "cluster/slurm_script.h"
#include "cluster/ssh_backend.h"
#include "cluster/wait_run.h"
#include "common/config/load.h"
#include "common/exit_codes.h"
#include "common/log.h"
#include "options/dice_config.h"

namespace {

using dice::kExitBadInput;
using dice::kExitFailure;
using dice::kExitOk;

constexpr const char* kUsage =
    "usage: dice-cluster up CONFIG [KEY=VALUE ...] [--dry-run]\n"
    "       dice-cluster status (--state-dir DIR | --config CONFIG [KEY=VALUE ...])\n"
    "       dice-cluster logs [SERVICE] [-n LINES] (--state-dir DIR | --config CONFIG [KEY=VALUE "
    "...])\n"
    "       dice-cluster down (--state-dir DIR | --config CONFIG [KEY=VALUE ...])\n"
    "       dice-cluster wait [--timeout SECONDS] [--log] (--state-dir DIR | --config CONFIG "
    "[KEY=VALUE ...])\n"
    "The state dir is cluster.local.state_dir (default <folder of run.reward_log_path>/cluster);\n"
    "`up` prints it. Exit status: 0 ok, 1 failed, 2 bad usage, config or state dir.\n";

struct Args {
  std::string command;
  std::string config_path;
  std::vector<std::string> overrides;
  std::string state_dir;
  std::string service;
  int lines = 100;
  double timeout_seconds = 0;
  bool dry_run = false;
  bool log_lines = false;  // wait --log: the learner's log lines even on a terminal
};

int usage_error(const std::string& why) {
  std::cerr << "dice-cluster: " << why << "\n" << kUsage;
  return kExitBadInput;
}

int status_exit(const dice::Status& status) {
  if (status.ok()) return kExitOk;
  std::cerr << "dice-cluster: " << status.message() << "\n";
  switch (status.code()) {
    case dice::StatusCode::kInvalidArgument:
    case dice::StatusCode::kNotFound:
      return kExitBadInput;
    default:
      return kExitFailure;
  }
}

// Parses argv into *args; returns an error message, or empty when fine.
std::string parse_args(int argc, char** argv, Args* args) {
  if (argc < 2) return "missing command";
  args->command = argv[1];
  if (args->command != "up" && args->command != "status" && args->command != "logs" &&
      args->command != "down" && args->command != "wait") {
    return "unknown command '" + args->command + "' (expected up, status, logs, down or wait)";
  }
  for (int i = 2; i < argc; ++i) {
    std::string arg = argv[i];
    bool has_value = i + 1 < argc;
    if (arg == "--state-dir" || arg == "--config" || arg == "-n") {
      if (!has_value) return arg + " needs a value";
      std::string value = argv[++i];
      if (arg == "--state-dir") args->state_dir = value;
      if (arg == "--config") args->config_path = value;
      if (arg == "-n") {
        char* end = nullptr;
        long n = std::strtol(value.c_str(), &end, 10);
        if (value.empty() || *end != '\0' || n <= 0 || n > 1000000) {
          return "-n expects a positive line count, got '" + value + "'";
        }
        args->lines = static_cast<int>(n);
      }
    } else if (arg == "--timeout" && args->command == "wait") {
      if (!has_value) return arg + " needs a value";
      const std::string value = argv[++i];
      char* end = nullptr;
      const double seconds = std::strtod(value.c_str(), &end);
      if (value.empty() || *end != '\0' || !(seconds > 0)) {
        return "--timeout expects a positive number of seconds, got '" + value + "'";
      }
      args->timeout_seconds = seconds;
    } else if (arg == "--log" && args->command == "wait") {
      args->log_lines = true;
    } else if (arg == "--dry-run" && args->command == "up") {
      args->dry_run = true;
    } else if (!arg.empty() && arg[0] == '-') {
      return "unknown option '" + arg + "'";
    } else if (arg.find('=') != std::string::npos) {
      args->overrides.push_back(arg);
    } else if (args->command == "up" && args->config_path.empty()) {
      args->config_path = arg;
    } else if (args->command == "logs" && args->service.empty()) {
      args->service = arg;
    } else {
      return "unexpected argument '" + arg + "'";
    }
  }
  if (args->command == "up") {
    if (args->config_path.empty()) return "up needs a CONFIG file";
    if (!args->state_dir.empty()) return "up takes its state dir from cluster.local.state_dir";
  } else if (args->state_dir.empty() == args->config_path.empty()) {
    return args->command + " needs exactly one of --state-dir DIR or --config CONFIG";
  }
  return {};
}

// A terminal that can redraw a line (TERM=dumb cannot erase one).
bool stdout_is_terminal() {
  const char* term = std::getenv("TERM");
  return isatty(STDOUT_FILENO) == 1 && !(term != nullptr && std::string(term) == "dumb");
}

int stdout_columns() {
  winsize size{};
  return ioctl(STDOUT_FILENO, TIOCGWINSZ, &size) == 0 && size.ws_col > 0 ? size.ws_col : 80;
}

// up --dry-run: prints what `up` would run for the config's backend, starting nothing.
int dry_run(const dice::DiceConfig& config, const std::string& config_path,
            const std::vector<std::string>& overrides) {
  using namespace dice::cluster;
  // Every backend looks executables up here (ssh and slurm: on the shared filesystem).
  PlanInputs inputs{config_path, overrides, config.run.id.empty() ? "RUN_ID" : config.run.id,
                    self_executable()};
  dice::Result<std::vector<ServiceSpec>> services = plan_services(config.cluster, inputs);
  if (!services.ok()) return status_exit(services.status());
  if (config.cluster.dash.enabled) {
    dice::Result<ServiceSpec> dash =
        plan_dashboard(config.cluster, config.run.reward_log_path, inputs.self_exe);
    if (!dash.ok()) return status_exit(dash.status());
    services->push_back(std::move(*dash));
  }
  std::string work_dir = dice::config::working_directory();
  if (config.cluster.backend == dice::ClusterBackend::kSsh) {
    std::vector<ServiceState> states(services->size());
    services = ssh_services(config, *services, resolve_state_dir(config), inputs.run_id, &states);
    if (!services.ok()) return status_exit(services.status());
  }
  if (config.cluster.backend == dice::ClusterBackend::kSlurm) {
    std::cout << slurm_batch_script(config.cluster, *services, work_dir, resolve_state_dir(config),
                                    inputs.run_id);
  } else {
    for (const auto& spec : *services) {
      std::cout << spec.name << ": " << shell_quote(spec.executable);
      for (const auto& arg : spec.args) std::cout << " " << shell_quote(arg);
      std::cout << "\n";
    }
  }
  return kExitOk;
}

int up(const dice::DiceConfig& config, const std::string& config_path,
       const std::vector<std::string>& overrides, const std::string& state_dir) {
  using namespace dice::cluster;
  bool slurm = config.cluster.backend == dice::ClusterBackend::kSlurm;
  // A slurm run recorded here must be stopped before a local one starts, or its job is orphaned.
  dice::Status free = slurm ? dice::Status::ok_status() : check_no_active_slurm_job(state_dir);
  if (!free.ok()) return status_exit(free);
  dice::Result<ClusterState> up =
      slurm ? slurm_up(config, config_path, overrides) : local_up(config, config_path, overrides);
  if (!up.ok()) return status_exit(up.status());
  if (slurm) {
    std::cout << "up: run '" << up->run_id << "' submitted as slurm job " << up->slurm_job_id
              << " (" << up->slurm_job_state << ") with " << up->services.size()
              << " services; state and logs in " << state_dir << "\n";
  } else {
    std::cout << "up: run '" << up->run_id << "' started " << up->services.size()
              << " services; state and logs in " << state_dir << "\n";
  }
  if (config.cluster.dash.enabled) {
    std::cout << "  dashboard: " << dashboard_url(config.cluster);
    // On another machine than this one, the address is the learner node's (its loopback there).
    if (config.cluster.backend != dice::ClusterBackend::kLocal) {
      for (const auto& s : up->services) {
        if (s.role == "dash") std::cout << " on " << s.node;
      }
    }
    std::cout << "\n";
  }
  std::cout << "  status: dice-cluster status --state-dir " << state_dir << "\n"
            << "  logs:   dice-cluster logs [SERVICE] --state-dir " << state_dir << "\n"
            << "  stop:   dice-cluster down --state-dir " << state_dir << "\n"
            << format_status(*up, wall_seconds());
  return kExitOk;
}

int run(const Args& args) {
  std::string state_dir = args.state_dir;
  dice::DiceConfig config;
  std::string config_path;
  if (!args.config_path.empty()) {
    config_path = dice::config::directory_of(args.config_path) + "/" +
                  args.config_path.substr(args.config_path.rfind('/') + 1);
    dice::Result<dice::DiceConfig> loaded = dice::load_dice_config(config_path, args.overrides);
    if (!loaded.ok()) return status_exit(loaded.status());
    config = std::move(loaded).value();
    dice::LogOptions log = dice::log_options();
    log.level = config.run.log_level;
    dice::log_configure(log);
    if (args.dry_run) return dry_run(config, config_path, args.overrides);
    state_dir = dice::cluster::resolve_state_dir(config);
  }
  if (args.command == "up") return up(config, config_path, args.overrides, state_dir);

  // status, logs and down follow the backend the run was started with.
  dice::Result<dice::cluster::ClusterState> recorded = dice::cluster::read_state_file(state_dir);
  bool slurm = recorded.ok() && recorded->backend == "slurm";
  if (args.command == "status") {
    return status_exit(slurm ? dice::cluster::slurm_status(state_dir, std::cout)
                             : dice::cluster::local_status(state_dir, std::cout));
  }
  if (args.command == "wait") {
    dice::cluster::WaitOptions wait;
    wait.timeout_seconds = args.timeout_seconds;
    if (!args.log_lines && stdout_is_terminal()) {
      wait.follow = dice::cluster::WaitOptions::Follow::kHuman;
      wait.terminal_columns = stdout_columns;
    }
    return status_exit(dice::cluster::wait_for_learner(state_dir, wait, std::cout));
  }
  if (args.command == "logs") {
    return status_exit(
        slurm ? dice::cluster::slurm_logs(state_dir, args.service, args.lines, std::cout)
              : dice::cluster::local_logs(state_dir, args.service, args.lines, std::cout));
  }
  return status_exit(slurm ? dice::cluster::slurm_down(state_dir, std::cout)
                           : dice::cluster::local_down(state_dir, std::cout));
}

}  // namespace

int main(int argc, char** argv) {
  Args args;
  std::string error = parse_args(argc, argv, &args);
  if (!error.empty()) return usage_error(error);
  dice::LogOptions log;
  log.component = "cluster";
  dice::log_configure(log);
  return run(args);
}
