// dice-config: check, print and document dice configuration files.
//
//   dice-config check CONFIG [KEY=VALUE ...] [--kind dice|curriculum|model]
//   dice-config print CONFIG [KEY=VALUE ...] [--kind dice|curriculum|model]
//   dice-config docs [--kind dice|curriculum|model]
//
// check: loads and validates CONFIG (for kind dice, also the curriculum and model-shape files it
//   names) and prints a one-line summary. print: the resolved YAML, every key with defaults filled
//   in and paths made absolute (what a service's --print-config shows). docs: a Markdown table of
//   every key. Overrides KEY=VALUE are applied in order before decoding.
// Exit status: 0 on success; 2 on a bad config, a bad override or bad usage (the error is on
// stderr).
#include <cstdio>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include "common/config/describe.h"
#include "common/config/encode.h"
#include "common/config/load.h"
#include "common/exit_codes.h"
#include "options/dice_config.h"

namespace {

using dice::kExitBadInput;
using dice::kExitOk;

constexpr const char* kUsage =
    "usage: dice-config check CONFIG [KEY=VALUE ...] [--kind dice|curriculum|model]\n"
    "       dice-config print CONFIG [KEY=VALUE ...] [--kind dice|curriculum|model]\n"
    "       dice-config docs [--kind dice|curriculum|model]\n"
    "KEY is a dotted key path (learner.optimizer.lr, cluster.nodes[0].host); VALUE is YAML.\n"
    "Exit status: 0 ok, 2 bad config, override or usage.\n";

struct Args {
  std::string command;
  std::string kind = "dice";
  std::string config_path;
  std::vector<std::string> overrides;
};

int usage_error(const std::string& why) {
  std::cerr << "dice-config: " << why << "\n" << kUsage;
  return kExitBadInput;
}

int config_error(const dice::Status& status) {
  std::cerr << "dice-config: " << status.message() << "\n";
  return kExitBadInput;
}

// Loads CONFIG as `Options`, then prints its YAML (print) or `summary` of it (check).
template <class Options, class Summary>
int check_or_print(const Args& args, Summary summary) {
  dice::Result<Options> loaded =
      dice::config::load_config_file<Options>(args.config_path, args.overrides);
  if (!loaded.ok()) return config_error(loaded.status());
  if (args.command == "print") {
    std::cout << dice::config::to_yaml_text(*loaded);
  } else {
    std::cout << "ok: " << args.config_path << " (" << summary(*loaded) << ")\n";
  }
  return kExitOk;
}

int run_dice(const Args& args) {
  dice::Result<dice::DiceConfig> loaded = dice::load_dice_config(args.config_path, args.overrides);
  if (!loaded.ok()) return config_error(loaded.status());
  const dice::DiceConfig& config = *loaded;
  if (args.command == "print") {
    std::cout << dice::print_dice_config(config);
    return kExitOk;
  }
  int steps = 0;
  for (const auto& phase : config.curriculum.phases) steps += phase.steps;
  std::cout << "ok: " << args.config_path << " (" << config.curriculum.phases.size()
            << " curriculum phases, " << steps << " steps; " << config.cluster.nodes.size()
            << " nodes, backend " << dice::config::enum_to_name(config.cluster.backend) << ")\n";
  return kExitOk;
}

int run_docs(const std::string& kind) {
  using dice::config::describe_fields;
  using dice::config::fields_markdown;
  if (kind == "dice") std::cout << fields_markdown(describe_fields<dice::DiceConfig>());
  if (kind == "curriculum")
    std::cout << fields_markdown(describe_fields<dice::CurriculumOptions>());
  if (kind == "model") std::cout << fields_markdown(describe_fields<dice::ModelShape>());
  return kExitOk;
}

}  // namespace

int main(int argc, char** argv) {
  Args args;
  std::vector<std::string> positional;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      std::cout << kUsage;
      return kExitOk;
    }
    if (arg == "--kind" || arg.rfind("--kind=", 0) == 0) {
      if (arg == "--kind") {
        if (i + 1 == argc) return usage_error("--kind needs a value");
        args.kind = argv[++i];
      } else {
        args.kind = arg.substr(std::strlen("--kind="));
      }
      continue;
    }
    if (arg.size() > 1 && arg[0] == '-') return usage_error("unknown option '" + arg + "'");
    positional.push_back(arg);
  }
  if (args.kind != "dice" && args.kind != "curriculum" && args.kind != "model") {
    return usage_error("unknown --kind '" + args.kind + "' (expected dice, curriculum or model)");
  }
  if (positional.empty()) return usage_error("missing command");
  args.command = positional[0];
  if (args.command == "docs") {
    if (positional.size() > 1) return usage_error("docs takes no arguments");
    return run_docs(args.kind);
  }
  if (args.command != "check" && args.command != "print") {
    return usage_error("unknown command '" + args.command + "'");
  }
  if (positional.size() < 2) return usage_error(args.command + " needs a CONFIG file");
  args.config_path = positional[1];
  args.overrides.assign(positional.begin() + 2, positional.end());

  if (args.kind == "curriculum") {
    return check_or_print<dice::CurriculumOptions>(args, [](const dice::CurriculumOptions& c) {
      return std::to_string(c.phases.size()) + " phases";
    });
  }
  if (args.kind == "model") {
    return check_or_print<dice::ModelShape>(args, [](const dice::ModelShape& m) {
      return m.name + ", " + std::to_string(m.num_hidden_layers) + " layers";
    });
  }
  return run_dice(args);
}
