// A reward worker's judging of a candidate, as a process a test can SIGKILL mid-candidate
// (sandbox_worker_death_test.cc): the evaluator (reward/evaluate/evaluator.h) judges, on the CPU,
// a candidate whose kernel never ends (evaluate_fixtures/fake_extension_hangs.py), with its judge
// and runner taken from an EvaluatorPrestart as a reward worker's GPU slot takes them, and their
// successors started ahead; the judging runs on a thread of its own, as on a worker's pool.
//
//   evaluator_parent_test_double FIXTURE_DIR
//
// Never ends on its own (the candidate's limit is an hour); exits 1, saying why on stderr, when
// the judging ends anyway.
#include <cstdio>
#include <filesystem>
#include <string>
#include <thread>

#include "common/read_file.h"
#include "reward/evaluate/evaluator.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s FIXTURE_DIR\n", argv[0]);
    return 2;
  }
  const std::filesystem::path dir = argv[1];
  auto reference = dice::read_file((dir / "reference_add.py").string());
  auto candidate = dice::read_file((dir / "candidate_add.py").string());
  if (!reference.ok() || !candidate.ok()) {
    std::fprintf(stderr, "cannot read the fixtures in %s\n", argv[1]);
    return 2;
  }
  dice::CompileOutcome module;
  module.module_name = "fused_ext";
  module.module_path = (dir / "fake_extension_hangs.py").string();
  dice::EvaluatorOptions options;
  options.python = "/usr/bin/python3";
  options.device = "cpu";
  options.trials = 1;
  options.sandbox.timeout_seconds = 3600;
  options.sandbox.memory_limit_mb = 8192;
  dice::EvaluatorPrestart prestart;
  std::string ended;
  std::thread([&] {
    auto report = dice::evaluate_candidate({reference.value(), {}, candidate.value(), {module}, {}},
                                           options, &prestart);
    ended = report.ok() ? report->detail : report.status().to_string();
  }).join();
  std::fprintf(stderr, "the judging ended: %s\n", ended.c_str());
  return 1;
}
