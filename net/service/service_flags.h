// The command line every dice service shares, and the start-up steps that follow it:
//
//   dice-reward --config configs/local.yaml --worker-index 3 reward.max_concurrent=2
//   dice-learner --config configs/local.yaml --print-config learner.optimizer.lr=2e-6
//
// Flags: --config FILE (required), --print-config, --run-id ID, --worker-index N, --metrics-port P,
// --log-level debug|info|warn|error, --transport-keys DIR, --resume (dice-learner), --help; then
// any number of "a.b.c=value" overrides (see common/config/overrides.h). "--flag=value" works as
// well as "--flag value".
#pragma once

#include <functional>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "common/log.h"
#include "common/status.h"
#include "options/dice_config.h"

namespace dice::service {

// What the command line asked for. Parsing checks each flag's form; the config itself is checked
// when it is loaded.
struct ServiceFlags {
  std::string config_path;             // --config FILE. Required unless --help. Default: empty
  bool print_config = false;           // --print-config: print the resolved YAML, exit 0
  std::string run_id;                  // --run-id: wins over run.id. Default: empty = config's
  std::optional<int> worker_index;     // --worker-index N (N >= 0). Default: none
  std::optional<int> metrics_port;     // --metrics-port P (0-65535). Default: none
  std::optional<LogLevel> log_level;   // --log-level: wins over run.log_level. Default: none
  std::string transport_keys;          // --transport-keys DIR: the run's CURVE keys. Default: ""
  bool resume = false;                 // --resume: dice-learner continues the run (RESUME.md)
  bool help = false;                   // --help / -h: print usage, exit 0
  std::vector<std::string> overrides;  // trailing "a.b.c=value", applied in order
};

// InvalidArgument naming the flag for an unknown flag, a missing or bad value, a bare word that is
// not an override, or a missing --config (unless --help).
Result<ServiceFlags> parse_service_flags(int argc, const char* const* argv);

// The usage text for `program` (e.g. "dice-reward").
std::string service_usage(const std::string& program);

// What a service runs with once start-up is done.
struct ServiceContext {
  DiceConfig config;                // with the flags' run id and log level applied
  std::string component;            // "learner", "rollout", "reward", ...
  std::optional<int> worker_index;  // from --worker-index
  std::optional<int> metrics_port;  // from --metrics-port (none: the service's default)
  std::string transport_keys;       // from --transport-keys (empty: none given)
  bool resume = false;              // from --resume (the learner's only)
};

// Loads flags.config_path with flags.overrides (then --run-id and --log-level, which win), makes a
// run id from the start time when none is set ("r20261130-004053"), and configures logging with
// the component (suffixed "-N" for a worker index), run id and level. Errors are the config's.
Result<ServiceContext> prepare_service(const std::string& component, const ServiceFlags& flags);

// The whole start-up of a service main:
//   bad flags -> message and usage on `err`, returns kExitBadInput (2, common/exit_codes.h);
//   --help -> usage on `out`, kExitOk; bad config -> message on `err`, kExitBadInput;
//   --print-config -> resolved YAML on `out`, kExitOk;
//   else tunes malloc for large messages (transport/allocator_tuning.h), runs `body` and returns
//   what it returns.
int run_service_main(const std::string& component, int argc, const char* const* argv,
                     const std::function<int(ServiceContext&)>& body, std::ostream& out,
                     std::ostream& err);

}  // namespace dice::service
