// dice-data: generates data for dice. Commands: curriculum, split-infill, build-sft (cli.h,
// README.md).
#include <iostream>
#include <string>
#include <vector>

#include "tools/dice-data/build_sft.h"
#include "tools/dice-data/cli.h"
#include "tools/dice-data/curriculum.h"
#include "tools/dice-data/curriculum_writer.h"
#include "tools/dice-data/pipeline_judge.h"
#include "tools/dice-data/split_infill_command.h"

namespace {

int run_curriculum(const dice::data::CliRequest& request) {
  using namespace dice::data;
  const Curriculum curriculum = generate_curriculum(request.options);
  const dice::Status written = write_curriculum(curriculum, request.out_dir);
  if (!written.ok()) {
    std::cerr << "dice-data: " << written.message() << "\n";
    return 1;
  }
  std::cout << "dice-data: wrote " << request.out_dir << ": " << curriculum.sft.size()
            << " SFT pairs, " << curriculum.rl_infill.size() << " + " << curriculum.rl_e2e.size()
            << " RL tasks, " << curriculum.heldout_infill.size() << " + "
            << curriculum.heldout_e2e.size() << " held-out tasks, "
            << curriculum.heldout_indist_infill.size() << " + "
            << curriculum.heldout_indist_e2e.size() << " in-distribution held-out tasks (seed "
            << request.options.seed << ")\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace dice::data;
  std::vector<std::string> args(argv + 1, argv + argc);
  auto request = parse_command_line(args);
  if (!request.ok()) {
    std::cerr << "dice-data: " << request.status().message()
              << "\nRun 'dice-data --help' for the usage.\n";
    return 2;
  }
  if (request->help) {
    std::cout << usage_text();
    return 0;
  }
  if (request->command == Command::kSplitInfill)
    return run_split_infill(request->split, std::cout, std::cerr);
  if (request->command == Command::kBuildSft) {
    const BuildSftOptions& options = request->build_sft;
    return run_build_sft(
        options, [&] { return open_pipeline_judge(options.judge, std::cerr); }, std::cout,
        std::cerr);
  }
  return run_curriculum(*request);
}
