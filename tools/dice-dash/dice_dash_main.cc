// dice-dash: a live web dashboard over dice reward logs (docs/DASHBOARD.md). Opens each LOG as a
// RocksDB secondary (read-only, no lock: the run writing it is never slowed), serves a page with
// its charts and a JSON API, and prints the address it serves on. Exit status: 0 stopped by
// SIGINT/SIGTERM, 1 could not serve (the address is taken), 2 bad command line.
#include <pthread.h>

#include <charconv>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "common/log.h"
#include "net/service/http_server.h"
#include "tools/dice-dash/api.h"
#include "tools/dice-dash/dashboard.h"
#include "tools/dice-dash/log_set.h"

namespace {

constexpr char kUsage[] = R"(usage: dice-dash [OPTIONS] LOG [LOG...]

Serves a live dashboard of dice reward logs (RocksDB folders), also while runs write them.

options:
  --bind ADDR        IP address to listen on (default 127.0.0.1; 0.0.0.0 = every interface)
  --port N           TCP port (default 8470; 0 = any free port, printed at start)
  --token TOKEN      every request must carry this access token (see docs/DASHBOARD.md)
  --token-file FILE  the token is FILE's first line (keeps it out of the process list)
  --refresh-ms N     catch up with the writers at most this often (default 1000)
  --log-level LEVEL  debug, info, warn, error (default info)

exit status: 0 stopped by a signal, 1 cannot serve, 2 bad command line.
)";

struct UsageError {
  std::string message;
};

struct Args {
  std::string bind = "127.0.0.1";
  uint16_t port = 8470;
  std::string token;
  int refresh_ms = 1000;
  dice::LogLevel log_level = dice::LogLevel::kInfo;
  std::vector<std::string> logs;
};

long parse_number(const std::string& flag, const std::string& text, long low, long high) {
  long value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size() || value < low ||
      value > high) {
    throw UsageError{flag + " \"" + text + "\": expected an integer in " + std::to_string(low) +
                     ".." + std::to_string(high)};
  }
  return value;
}

std::string read_token_file(const std::string& path) {
  std::ifstream in(path);
  std::string token;
  if (!in || !std::getline(in, token)) {
    throw UsageError{"--token-file \"" + path + "\": cannot read a line from it"};
  }
  if (!token.empty() && token.back() == '\r') token.pop_back();
  if (token.empty()) throw UsageError{"--token-file \"" + path + "\": its first line is empty"};
  return token;
}

Args parse_args(int argc, char** argv) {
  Args args;
  bool token_given = false;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "-h" || arg == "--help") {
      std::cout << kUsage;
      std::exit(0);
    }
    if (arg.rfind("--", 0) != 0) {
      args.logs.push_back(arg);
      continue;
    }
    std::string value;
    const size_t eq = arg.find('=');
    if (eq != std::string::npos) {
      value = arg.substr(eq + 1);
      arg = arg.substr(0, eq);
    } else {
      if (arg != "--bind" && arg != "--port" && arg != "--token" && arg != "--token-file" &&
          arg != "--refresh-ms" && arg != "--log-level") {
        throw UsageError{"unknown option " + arg};
      }
      if (i + 1 >= argc) throw UsageError{arg + " needs a value"};
      value = argv[++i];
    }
    if (arg == "--bind") {
      if (value.empty()) throw UsageError{"--bind: empty address"};
      args.bind = value;
    } else if (arg == "--port") {
      args.port = static_cast<uint16_t>(parse_number(arg, value, 0, 65535));
    } else if (arg == "--token" || arg == "--token-file") {
      if (token_given) throw UsageError{arg + ": give one of --token and --token-file, once"};
      token_given = true;
      args.token = arg == "--token" ? value : read_token_file(value);
      if (args.token.empty()) throw UsageError{"--token: empty token"};
    } else if (arg == "--refresh-ms") {
      args.refresh_ms = static_cast<int>(parse_number(arg, value, 0, 3600 * 1000));
    } else if (arg == "--log-level") {
      if (!dice::parse_log_level(value, &args.log_level)) {
        throw UsageError{"--log-level \"" + value + "\": expected debug, info, warn or error"};
      }
    } else {
      throw UsageError{"unknown option " + arg};
    }
  }
  if (args.logs.empty()) throw UsageError{"missing LOG: name at least one reward log folder"};
  return args;
}

}  // namespace

int main(int argc, char** argv) {
  // SIGINT and SIGTERM end the serving through sigwait() below: blocked here, before any thread
  // (RocksDB's, the server's) starts, so that every thread inherits the mask and none dies of them.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  Args args;
  try {
    args = parse_args(argc, argv);
  } catch (const UsageError& e) {
    std::cerr << "dice-dash: " << e.message << "\n\n" << kUsage;
    return 2;
  }
  dice::LogOptions log_options;
  log_options.level = args.log_level;
  log_options.component = "dash";
  dice::log_configure(log_options);

  dice::dash::LogSet logs(args.logs, std::chrono::milliseconds(args.refresh_ms));
  dice::dash::Api api(&logs);
  dice::dash::Dashboard dashboard(&api, args.token);
  for (size_t i = 0; i < logs.size(); ++i) {
    const dice::dash::LogView view = logs.view(i);
    if (view.reader == nullptr) {
      std::cout << "dice-dash: log " << i << " (" << view.path
                << ") not readable yet: " << view.status.to_string() << std::endl;
    }
  }
  // From here on only the server's thread touches the dashboard (and through it the logs).
  dice::service::HttpServerOptions options;
  options.host = args.bind;
  options.port = args.port;
  options.idle_timeout_ms = 30000;
  options.name = "dice-dash";
  options.body_limit = 16 * 1024;  // the page and the API take no request bodies
  auto server = dice::service::HttpServer::start(
      options, [&dashboard](const dice::service::HttpRequest& r) { return dashboard.handle(r); });
  if (!server.ok()) {
    std::cerr << "dice-dash: " << server.status().to_string() << "\n";
    return server.status().code() == dice::StatusCode::kInvalidArgument ? 2 : 1;
  }
  const bool v6 = args.bind.find(':') != std::string::npos;
  // One line a person or dice-cluster reads; stdout is flushed so a pipe sees it at once.
  std::cout << "dice-dash: serving http://" << (v6 ? "[" + args.bind + "]" : args.bind) << ":"
            << server.value()->port() << "/" << (args.token.empty() ? "" : " (token required)")
            << std::endl;
  int stop_signal = 0;
  sigwait(&stop_signals, &stop_signal);
  DICE_LOG(Info) << "dice-dash: stopping" << dice::kv("signal", stop_signal);
  server.value()->stop();
  return 0;
}
