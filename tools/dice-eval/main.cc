// dice-eval: evaluates a checkpoint over a problem set through dice's services and writes the
// field's table (cli.h: usage; evaluation.h: what it does; README.md: the rules).
#include <iostream>
#include <string>
#include <vector>

#include "common/exit_codes.h"
#include "tools/dice-eval/cli.h"
#include "tools/dice-eval/evaluation.h"

int main(int argc, char** argv) {
  using namespace dice::eval;
  using dice::kExitBadInput;
  using dice::kExitOk;
  const std::vector<std::string> args(argv + 1, argv + argc);
  auto request = parse_command_line(args);
  if (!request.ok()) {
    std::cerr << "dice-eval: " << request.status().message()
              << "\nRun 'dice-eval --help' for the usage.\n";
    return kExitBadInput;
  }
  if (request->help) {
    std::cout << usage_text();
    return kExitOk;
  }
  return run_evaluation(*request, std::cout, std::cerr);
}
