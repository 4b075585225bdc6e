#include "net/service/service_flags.h"

#include <cerrno>
#include <chrono>
#include <climits>
#include <cstdlib>
#include <ctime>
#include <ostream>

#include "common/exit_codes.h"
#include "net/transport/allocator_tuning.h"

namespace dice::service {
namespace {

// Run ids travel in log lines, reward-log keys and file names: keep them to a safe alphabet.
bool valid_run_id(const std::string& id) {
  if (id.empty() || id.size() > 128) return false;
  for (char c : id) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '-' || c == '_' || c == '.';
    if (!ok) return false;
  }
  return true;
}

std::string run_id_from_clock() {
  std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "r%Y%m%d-%H%M%S", &tm);
  return buf;
}

Status apply_flag(const std::string& name, const std::string& value, ServiceFlags* flags) {
  if (name == "--config") {
    if (value.empty()) return Status::invalid_argument("--config: expected a file path");
    flags->config_path = value;
  } else if (name == "--run-id") {
    if (!valid_run_id(value)) {
      return Status::invalid_argument("--run-id: '" + value +
                                      "' is not a run id (1-128 of A-Z a-z 0-9 . _ -)");
    }
    flags->run_id = value;
  } else if (name == "--worker-index") {
    errno = 0;
    char* end = nullptr;
    long n = std::strtol(value.c_str(), &end, 10);
    if (value.empty() || *end != '\0' || errno == ERANGE || n < 0 || n > INT_MAX) {
      return Status::invalid_argument("--worker-index: '" + value +
                                      "' is not a non-negative integer");
    }
    flags->worker_index = static_cast<int>(n);
  } else if (name == "--metrics-port") {
    errno = 0;
    char* end = nullptr;
    long n = std::strtol(value.c_str(), &end, 10);
    if (value.empty() || *end != '\0' || errno == ERANGE || n < 0 || n > 65535) {
      return Status::invalid_argument("--metrics-port: '" + value +
                                      "' is not a port number (0-65535; 0 = any free port)");
    }
    flags->metrics_port = static_cast<int>(n);
  } else if (name == "--transport-keys") {
    if (value.empty()) return Status::invalid_argument("--transport-keys: expected a folder");
    flags->transport_keys = value;
  } else if (name == "--log-level") {
    LogLevel level;
    if (!parse_log_level(value, &level)) {
      return Status::invalid_argument("--log-level: '" + value +
                                      "' is not one of debug, info, warn, error");
    }
    flags->log_level = level;
  }
  return Status::ok_status();
}

bool takes_value(const std::string& name) {
  return name == "--config" || name == "--run-id" || name == "--worker-index" ||
         name == "--metrics-port" || name == "--log-level" || name == "--transport-keys";
}

}  // namespace

Result<ServiceFlags> parse_service_flags(int argc, const char* const* argv) {
  ServiceFlags flags;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i] == nullptr ? "" : argv[i];
    if (arg == "--help" || arg == "-h") {
      flags.help = true;
    } else if (arg == "--print-config") {
      flags.print_config = true;
    } else if (arg == "--resume") {
      flags.resume = true;
    } else if (arg.rfind("--", 0) == 0) {
      std::string name = arg;
      std::string value;
      bool inline_value = false;
      if (auto eq = arg.find('='); eq != std::string::npos) {
        name = arg.substr(0, eq);
        value = arg.substr(eq + 1);
        inline_value = true;
      }
      if (!takes_value(name)) {
        return Status::invalid_argument("unknown flag '" + name + "' (argument " +
                                        std::to_string(i) + "); see --help");
      }
      if (!inline_value) {
        if (i + 1 >= argc) return Status::invalid_argument(name + ": missing value");
        value = argv[++i];
      }
      DICE_RETURN_IF_ERROR(apply_flag(name, value, &flags));
    } else if (!arg.empty() && arg[0] == '-') {
      return Status::invalid_argument("unknown flag '" + arg + "' (argument " + std::to_string(i) +
                                      "); see --help");
    } else {
      auto eq = arg.find('=');
      if (eq == std::string::npos || eq == 0) {
        return Status::invalid_argument("argument " + std::to_string(i) + " '" + arg +
                                        "': expected a config override key.path=value");
      }
      flags.overrides.push_back(arg);
    }
  }
  if (!flags.help && flags.config_path.empty()) {
    return Status::invalid_argument("--config FILE is required; see --help");
  }
  return flags;
}

std::string service_usage(const std::string& program) {
  return "usage: " + program +
         " --config FILE [flags] [key.path=value ...]\n"
         "  --config FILE       the run's YAML config (e.g. configs/local.yaml)\n"
         "  --print-config      print the resolved config as YAML and exit\n"
         "  --run-id ID         run id for logs and records (overrides run.id)\n"
         "  --worker-index N    which worker of this service this process is\n"
         "  --metrics-port P    serve Prometheus /metrics on port P (0 = any free port)\n"
         "  --log-level L       debug, info, warn or error (overrides run.log_level)\n"
         "  --transport-keys D  the run's CURVE keys (dice-cluster makes them with\n"
         "                      cluster.transport.curve on)\n"
         "  --resume            dice-learner: continue the run the reward log holds under\n"
         "                      this run id from its resume folder (a new run id: start it)\n"
         "  --help              print this and exit\n"
         "  key.path=value      config override, applied in order (see dice-config docs)\n"
         "exit status (common/exit_codes.h): " +
         std::to_string(kExitOk) + " a clean end, " + std::to_string(kExitFailure) +
         " a failure, " + std::to_string(kExitBadInput) + " bad input,\n  " +
         std::to_string(kExitNoDiskSpace) + " too little free disk space, " +
         std::to_string(kExitNoDevice) +
         " no GPU or toolchain the service needs;\n"
         "  dice-cluster restarts a service only after a failure or a signal\n";
}

Result<ServiceContext> prepare_service(const std::string& component, const ServiceFlags& flags) {
  std::vector<std::string> overrides = flags.overrides;
  // Flags become overrides so that --print-config shows what the service really runs with.
  if (!flags.run_id.empty()) overrides.push_back("run.id=" + flags.run_id);
  if (flags.log_level)
    overrides.push_back(std::string("run.log_level=") + log_level_name(*flags.log_level));
  DICE_ASSIGN_OR_RETURN(DiceConfig config, load_dice_config(flags.config_path, overrides));
  if (config.run.id.empty()) config.run.id = run_id_from_clock();

  ServiceContext context{std::move(config),    component,   flags.worker_index, flags.metrics_port,
                         flags.transport_keys, flags.resume};
  LogOptions log;
  log.level = context.config.run.log_level;
  log.component = component;
  if (flags.worker_index) log.component += "-" + std::to_string(*flags.worker_index);
  log.run_id = context.config.run.id;
  log_configure(log);
  return context;
}

int run_service_main(const std::string& component, int argc, const char* const* argv,
                     const std::function<int(ServiceContext&)>& body, std::ostream& out,
                     std::ostream& err) {
  std::string program = argc > 0 && argv[0] != nullptr ? argv[0] : "dice-" + component;
  Result<ServiceFlags> flags = parse_service_flags(argc, argv);
  if (!flags.ok()) {
    err << program << ": " << flags.status().message() << "\n" << service_usage(program);
    return kExitBadInput;
  }
  if (flags->help) {
    out << service_usage(program);
    return kExitOk;
  }
  if (flags->resume && component != "learner") {
    err << program << ": --resume is dice-learner's flag (a " << component
        << " worker keeps no run state)\n";
    return kExitBadInput;
  }
  Result<ServiceContext> context = prepare_service(component, *flags);
  if (!context.ok()) {
    err << program << ": " << context.status().to_string() << "\n";
    return kExitBadInput;
  }
  if (flags->print_config) {
    out << print_dice_config(context->config);
    return kExitOk;
  }
  // Every service moves large messages; see allocator_tuning.h for why this pays.
  transport::tune_allocator_for_messages();
  return body(*context);
}

}  // namespace dice::service
