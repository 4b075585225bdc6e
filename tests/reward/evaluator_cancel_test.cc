// The learner's cancel reaches a judging in progress: the judge and the runner, real sandboxed
// processes on the CPU, are killed at once instead of running to the candidate's timeout.
// Needs torch in /usr/bin/python3 (python3-torch); skipped without.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <thread>

#include "common/cancellation.h"
#include "common/read_file.h"
#include "reward/evaluate/evaluator.h"

namespace dice {
namespace {

namespace fs = std::filesystem;

// A fixture's text ("" when unreadable: the evaluation then fails, and the test with it).
std::string fixture(const fs::path& path) {
  auto text = read_file(path.string());
  EXPECT_TRUE(text.ok()) << text.status().to_string();
  return text.ok() ? text.value() : std::string();
}

TEST(EvaluatorCancelTest, ACancelKillsTheJudgingInProgress) {
  if (std::system("/usr/bin/python3 -c 'import torch' 2>/dev/null") != 0) {
    GTEST_SKIP() << "/usr/bin/python3 has no torch (apt-get install python3-torch)";
  }
  const fs::path dir = fs::path(DICE_REWARD_TEST_DIR) / "evaluate_fixtures";
  CompileOutcome module;
  module.module_name = "fused_ext";
  module.module_path = (dir / "fake_extension_hangs.py").string();
  Cancellation cancellation;
  EvaluatorOptions options;
  options.python = "/usr/bin/python3";
  options.device = "cpu";
  options.trials = 1;
  options.sandbox.timeout_seconds = 120;  // what the hanging candidate would hold its slot for
  options.sandbox.memory_limit_mb = 8192;
  options.cancellation = &cancellation;

  // Whenever it lands (before the processes start, or while the kernel hangs), the evaluation
  // ends at once after it.
  std::thread canceller([&] {
    std::this_thread::sleep_for(std::chrono::seconds(5));
    cancellation.cancel();
  });
  const auto start = std::chrono::steady_clock::now();
  auto report = evaluate_candidate(
      {fixture(dir / "reference_add.py"), {}, fixture(dir / "candidate_add.py"), {module}, {}},
      options, nullptr);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  canceller.join();
  EXPECT_GT(seconds, 4.5) << "ended before the cancel: the candidate did not hang";
  EXPECT_LT(seconds, 40.0) << "the judging ran on after the cancel";
  if (report.ok()) {
    EXPECT_FALSE(report->correct);
    EXPECT_NE(report->failure, schema::FailureClass::NONE);
  }
}

}  // namespace
}  // namespace dice
