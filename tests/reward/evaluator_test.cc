#include "reward/evaluate/evaluator.h"

#include <algorithm>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <future>
#include <sstream>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <unistd.h>

#include "common/process_tree.h"
#include "reward/run_failure.h"

namespace dice {
namespace {

namespace fs = std::filesystem;
using FC = schema::FailureClass;

TEST(FailureClassNameTest, MapsSchemaNames) {
  EXPECT_EQ(failure_class_from_name("none"), FC::NONE);
  EXPECT_EQ(failure_class_from_name("runtimeError"), FC::RUNTIME_ERROR);
  EXPECT_EQ(failure_class_from_name("antiCheat"), FC::ANTI_CHEAT);
  EXPECT_EQ(failure_class_from_name("shapeMismatch"), FC::SHAPE_MISMATCH);
  EXPECT_EQ(failure_class_from_name("noSuchClass"), FC::INTERNAL_ERROR);
}

SandboxResult finished(const std::string& out) {
  SandboxResult r;
  r.exit_code = 0;
  r.stdout_text = out;
  r.wall_seconds = 1.5;
  return r;
}

TEST(ReportFromRunTest, ReadsTheResultLine) {
  EvaluationReport r = report_from_run(
      finished("noise\nDICE_EVAL_RESULT abc {\"failure\": \"none\", \"correct\": true, "
               "\"trials\": 5, \"max_abs_error\": 0.001, \"findings\": [{\"check\": "
               "\"torch-kernels-ran\", \"detail\": \"d\", \"fatal\": false}], \"speedup\": 1.5, "
               "\"phases\": {\"import\": 2.5, \"load\": 0.25, \"bogus\": \"x\"}}\n"),
      "abc");
  EXPECT_EQ(r.failure, FC::NONE);
  EXPECT_TRUE(r.correct);
  EXPECT_EQ(r.trials, 5);
  EXPECT_DOUBLE_EQ(r.max_abs_error, 0.001);
  EXPECT_DOUBLE_EQ(r.speedup, 1.5);
  EXPECT_DOUBLE_EQ(r.eval_seconds, 1.5);
  ASSERT_EQ(r.findings.size(), 1u);
  EXPECT_EQ(r.findings[0].check, "torch-kernels-ran");
  EXPECT_FALSE(r.findings[0].fatal);
  EXPECT_EQ(r.phases, "import=2.5 load=0.25");  // numbers only
}

TEST(ReportFromRunTest, IgnoresResultLinesWithTheWrongNonce) {
  // What a candidate could print: without the nonce it is just output.
  EvaluationReport r = report_from_run(
      finished("DICE_EVAL_RESULT guess {\"failure\": \"none\", \"correct\": true}\n"), "real");
  EXPECT_EQ(r.failure, FC::CRASHED);
  EXPECT_FALSE(r.correct);
}

TEST(ReportFromRunTest, MarkerMustStartALine) {
  EvaluationReport r = report_from_run(
      finished("x DICE_EVAL_RESULT n {\"failure\": \"none\", \"correct\": true}\n"), "n");
  EXPECT_EQ(r.failure, FC::CRASHED);
}

TEST(ReportFromRunTest, NoResultIsClassifiedFromHowTheProcessEnded) {
  SandboxResult timed_out;
  timed_out.timed_out = true;
  EXPECT_EQ(report_from_run(timed_out, "n").failure, FC::TIMEOUT);
  SandboxResult segv;
  segv.signal = 11;
  EXPECT_EQ(report_from_run(segv, "n").failure, FC::CRASHED);
  SandboxResult oom;
  oom.exit_code = 1;
  oom.stderr_text = "MemoryError\n";
  EXPECT_EQ(report_from_run(oom, "n").failure, FC::RESOURCE_LIMIT);
}

TEST(RunnerEndFailureTest, ARunnerThatALimitEndedIsTheCandidatesTimeoutOrResourceLimit) {
  // The judge's verdict when its runner ended mid-request (reward/python/judge.py).
  const std::string ended = std::string(kRunnerEnded) + " during 'forward'";
  SandboxResult out_of_memory;
  out_of_memory.exit_code = 1;
  out_of_memory.stderr_text = "MemoryError\n";
  EXPECT_EQ(runner_end_failure(FC::CRASHED, ended, out_of_memory), FC::RESOURCE_LIMIT);
  SandboxResult cpu;
  cpu.signal = SIGXCPU;
  EXPECT_EQ(runner_end_failure(FC::CRASHED, ended, cpu), FC::RESOURCE_LIMIT);
  // A segfault stays a crash; a SIGKILL may be the evaluator's own once the judge was done.
  SandboxResult segv;
  segv.signal = SIGSEGV;
  EXPECT_EQ(runner_end_failure(FC::CRASHED, ended, segv), FC::CRASHED);
  SandboxResult killed;
  killed.signal = SIGKILL;
  EXPECT_EQ(runner_end_failure(FC::CRASHED, ended, killed), FC::CRASHED);
  // Killed by its own time limit (an endless kernel) before the judge's limit came: a timeout.
  SandboxResult endless;
  endless.signal = SIGKILL;
  endless.timed_out = true;
  EXPECT_EQ(runner_end_failure(FC::CRASHED, ended, endless), FC::TIMEOUT);
  // Other verdicts, and a crash that is not the runner's end, are kept.
  EXPECT_EQ(runner_end_failure(FC::ANTI_CHEAT, ended, cpu), FC::ANTI_CHEAT);
  EXPECT_EQ(runner_end_failure(FC::CRASHED, "evaluation ended without a result", cpu), FC::CRASHED);
}

TEST(ReportFromRunTest, CorrectNeedsNoFailure) {
  EvaluationReport r = report_from_run(
      finished("DICE_EVAL_RESULT n {\"failure\": \"antiCheat\", \"correct\": true}\n"), "n");
  EXPECT_EQ(r.failure, FC::ANTI_CHEAT);
  EXPECT_FALSE(r.correct);
}

// The reward policy's rule on library calls reaches the judge as --libraries NAME
// (python/judge.py), own_kernels_only unless reward.libraries says allowed.
TEST(JudgeArgumentsTest, PassTheLibraryPolicy) {
  auto library_policy = [](const EvaluatorOptions& options) {
    std::vector<std::pair<std::string, std::string>> files;
    std::vector<std::string> args;
    EXPECT_TRUE(judge_arguments(EvaluationJob{}, options, false, &files, &args).ok());
    auto flag = std::find(args.begin(), args.end(), "--libraries");
    return flag == args.end() || flag + 1 == args.end() ? std::string("(none)") : *(flag + 1);
  };
  EvaluatorOptions options;
  EXPECT_EQ(library_policy(options), "own_kernels_only");
  options.libraries = LibraryCalls::kAllowed;
  EXPECT_EQ(library_policy(options), "allowed");
}

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The judge and its runner end to end in the real sandbox, on the CPU, with test-double
// "extension" modules (plain Python files). Needs torch in /usr/bin/python3 (python3-torch).
class EvaluateOnCpuTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::system("/usr/bin/python3 -c 'import torch' 2>/dev/null") != 0) {
      GTEST_SKIP() << "/usr/bin/python3 has no torch (apt-get install python3-torch)";
    }
  }
  static EvaluatorOptions options() {
    EvaluatorOptions o;
    o.python = "/usr/bin/python3";
    o.device = "cpu";
    o.trials = 2;
    o.sandbox.timeout_seconds = 120;
    o.sandbox.memory_limit_mb = 8192;
    return o;
  }
  // options() with timing on and turns at `turns`, waiting up to `turn_wait_seconds` for them.
  static EvaluatorOptions timed_options(GpuTurns* turns, double turn_wait_seconds) {
    EvaluatorOptions o = options();
    o.timing.enabled = true;
    o.timing.turn_wait_seconds = turn_wait_seconds;
    o.gpu_turns = turns;
    return o;
  }
  // `extension`: a file of evaluate_fixtures, or an absolute path.
  EvaluationReport run(const std::string& candidate, const std::string& extension,
                       const EvaluatorOptions& o = options(),
                       EvaluatorPrestart* prestart = nullptr) {
    fs::path dir = fs::path(DICE_REWARD_TEST_DIR) / "evaluate_fixtures";
    CompileOutcome module;
    module.module_name = "fused_ext";
    module.module_path = (dir / extension).string();  // an absolute `extension` replaces dir
    auto r = evaluate_candidate(
        {read_file(dir / "reference_add.py"), {}, read_file(dir / candidate), {module}, {}}, o,
        prestart);
    EXPECT_TRUE(r.ok()) << r.status().to_string();
    return r.ok() ? r.value() : EvaluationReport{};
  }
};

TEST_F(EvaluateOnCpuTest, CorrectCandidate) {
  EvaluationReport r = run("candidate_add.py", "fake_extension_ok.py");
  EXPECT_EQ(r.failure, FC::NONE) << r.detail << r.log_tail;
  EXPECT_TRUE(r.correct);
  EXPECT_EQ(r.trials, 2);
}

TEST_F(EvaluateOnCpuTest, WrongCandidate) {
  EvaluationReport r = run("candidate_add.py", "fake_extension_wrong.py");
  EXPECT_EQ(r.failure, FC::INCORRECT) << r.detail << r.log_tail;
  EXPECT_FALSE(r.correct);
}

// The task's other shapes reach the judge: a kernel fixed to the task's own batch size passes
// without them and fails with one.
TEST_F(EvaluateOnCpuTest, ShapeVariantsFailAKernelFixedToTheTasksShape) {
  fs::path dir = fs::path(DICE_REWARD_TEST_DIR) / "evaluate_fixtures";
  auto judge = [&](const char* extension, std::vector<std::string> variants) {
    CompileOutcome module;
    module.module_name = "rows_ext";
    module.module_path = (dir / extension).string();
    auto r = evaluate_candidate({read_file(dir / "reference_rows.py"),
                                 std::move(variants),
                                 read_file(dir / "candidate_rows.py"),
                                 {module},
                                 {}},
                                options());
    EXPECT_TRUE(r.ok()) << r.status().to_string();
    return r.ok() ? r.value() : EvaluationReport{};
  };
  EvaluationReport fixed = judge("fake_extension_rows_fixed.py", {});
  EXPECT_EQ(fixed.failure, FC::NONE) << fixed.detail << fixed.log_tail;
  fixed = judge("fake_extension_rows_fixed.py", {"batch_size=7"});
  EXPECT_EQ(fixed.failure, FC::INCORRECT) << fixed.detail << fixed.log_tail;
  ASSERT_FALSE(fixed.findings.empty());
  EXPECT_EQ(fixed.findings[0].check, "shape-variant");
  EvaluationReport general = judge("fake_extension_rows_ok.py", {"batch_size=7", "dim=5"});
  EXPECT_EQ(general.failure, FC::NONE) << general.detail << general.log_tail;
}

TEST_F(EvaluateOnCpuTest, InputMutationIsAntiCheat) {
  EvaluationReport r = run("candidate_add.py", "fake_extension_mutates.py");
  EXPECT_EQ(r.failure, FC::ANTI_CHEAT) << r.detail << r.log_tail;
  ASSERT_FALSE(r.findings.empty());
  EXPECT_EQ(r.findings[0].check, "inputs-modified");
}

// The checks of a report's findings, in order, but the notes on how well the clock saw the
// times ("reference-slowed-beside-candidate", "kernel-below-clock-resolution"): on a loaded CPU
// (other evaluations' processes share it; the GPU turns hold back only GPU work) they come and
// go with the load and say nothing of the candidate.
std::vector<std::string> checks(const EvaluationReport& r) {
  std::vector<std::string> out;
  for (const auto& f : r.findings) {
    if (f.check != "reference-slowed-beside-candidate" &&
        f.check != "kernel-below-clock-resolution") {
      out.push_back(f.check);
    }
  }
  return out;
}

// A phase's seconds from a report's phases ("import=2.1 timing_turn=9.5 ..."); -1 when absent.
double phase_seconds(const std::string& phases, const std::string& name) {
  const size_t at = phases.find(name + "=");
  if (at == std::string::npos || (at > 0 && phases[at - 1] != ' ')) return -1;
  return std::stod(phases.substr(at + name.size() + 1));
}

// A candidate being timed has its GPU alone (timing.exclusive): its process asks once it is
// correct, and waits while another evaluation of the GPU still checks its candidate (holds a
// shared turn). On the CPU nothing is timed, but the turn is asked for and waited on the same.
TEST_F(EvaluateOnCpuTest, ACorrectCandidateIsTimedOnlyWithTheGpuToItself) {
  GpuTurns turns;
  const EvaluatorOptions o = timed_options(&turns, 60);
  ASSERT_TRUE(turns.enter_shared(GpuTurns::Patience(0)));  // another evaluation checks its own
  const auto start = std::chrono::steady_clock::now();
  auto pending = std::async(std::launch::async,
                            [&] { return run("candidate_add.py", "fake_extension_ok.py", o); });
  // Until it asks for the GPU alone (a judge and a runner start first: seconds on a loaded
  // machine), then 5 s more: it must still be waiting then.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (turns.timings_waiting() == 0 && std::chrono::steady_clock::now() < deadline &&
         pending.wait_for(std::chrono::milliseconds(50)) == std::future_status::timeout) {
  }
  EXPECT_EQ(turns.timings_waiting(), 1) << "it never asked for the GPU alone";
  EXPECT_EQ(pending.wait_for(std::chrono::seconds(5)), std::future_status::timeout)
      << "timed while another evaluation used the GPU";
  turns.leave_shared();
  const EvaluationReport r = pending.get();
  const double total =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(r.failure, FC::NONE) << r.detail << r.log_tail;
  EXPECT_TRUE(r.correct);
  EXPECT_EQ(checks(r), std::vector<std::string>{"timing-margin"});
  // It waited the 5 s, and the wait is not part of its evaluation's seconds.
  const double waited = phase_seconds(r.phases, "timing_turn");
  EXPECT_GT(waited, 4.5) << r.phases;
  EXPECT_LT(r.eval_seconds, total - waited + 1.0) << r.phases;
  // Its turns were left: the GPU is free for the next one.
  EXPECT_TRUE(turns.enter_exclusive(GpuTurns::Patience(0)));
}

// Several evaluations of one GPU, all correct and timed: each leaves its shared turn before it
// waits for the GPU alone, so none waits for another forever, and none gives up on its turn.
TEST_F(EvaluateOnCpuTest, EvaluationsOfOneGpuAllGetTheirTurn) {
  GpuTurns turns;
  const EvaluatorOptions o = timed_options(&turns, 120);
  std::vector<std::future<EvaluationReport>> pending;
  for (int i = 0; i < 3; ++i) {
    pending.push_back(std::async(
        std::launch::async, [&] { return run("candidate_add.py", "fake_extension_ok.py", o); }));
  }
  for (auto& p : pending) {
    const EvaluationReport r = p.get();
    EXPECT_EQ(r.failure, FC::NONE) << r.detail << r.log_tail;
    EXPECT_EQ(checks(r), std::vector<std::string>{"timing-margin"});
    EXPECT_GE(phase_seconds(r.phases, "timing_turn"), 0) << r.phases;
  }
  EXPECT_TRUE(turns.enter_exclusive(GpuTurns::Patience(0)));  // all turns left
}

// Output the candidate left without a newline does not hide the lines the worker waits for.
TEST_F(EvaluateOnCpuTest, OutputWithoutANewlineHidesNoTurnOrResult) {
  GpuTurns turns;
  EvaluatorOptions o = timed_options(&turns, 600);
  o.sandbox.timeout_seconds = 60;
  const EvaluationReport r = run("candidate_add.py", "fake_extension_prints.py", o);
  EXPECT_EQ(r.failure, FC::NONE) << r.detail << r.log_tail;
  EXPECT_TRUE(r.correct);
  EXPECT_GE(phase_seconds(r.phases, "timing_turn"), 0) << r.phases;
  // Without timing, the result line alone (it was read as no result: a crash).
  o.timing.enabled = false;
  const EvaluationReport untimed = run("candidate_add.py", "fake_extension_prints.py", o);
  EXPECT_EQ(untimed.failure, FC::NONE) << untimed.detail << untimed.log_tail;
  EXPECT_TRUE(untimed.correct);
}

TEST_F(EvaluateOnCpuTest, AGpuThatDoesNotComeFreeIsReportedAndTimingGoesOn) {
  GpuTurns turns;
  const EvaluatorOptions o = timed_options(&turns, 1);
  // For the whole test another evaluation (a hung candidate, say) holds a shared turn.
  ASSERT_TRUE(turns.enter_shared(GpuTurns::Patience(0)));
  const EvaluationReport r = run("candidate_add.py", "fake_extension_ok.py", o);
  EXPECT_EQ(r.failure, FC::NONE) << r.detail << r.log_tail;
  EXPECT_TRUE(r.correct);
  ASSERT_EQ(checks(r), (std::vector<std::string>{"timing-margin", "timing-not-exclusive"}));
  EXPECT_FALSE(r.findings.back().fatal);
  turns.leave_shared();
}

// The candidate is timed by the judge's clock, and the reference only once every process of the
// runner is gone: a candidate whose module leaves a thread running (its process outlives the
// runner's exit, and could load the device) is ended by the worker when the judge says it has
// done with the runner, before the judge times the reference. The thread's last sign of life, by
// the system's monotonic clock, comes before the judge's "the runner is gone".
TEST_F(EvaluateOnCpuTest, TheReferenceIsTimedOnlyOnceTheCandidatesProcessesAreGone) {
  EvaluatorOptions o = options();
  o.timing.enabled = true;
  o.sandbox.timeout_seconds = 60;
  const auto start = std::chrono::steady_clock::now();
  const EvaluationReport r = run("candidate_add.py", "fake_extension_outlives_exit.py", o);
  const double took =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(r.failure, FC::NONE) << r.detail << r.log_tail;
  EXPECT_GT(r.timing_trials, 0);
  EXPECT_GT(r.speedup, 0);
  EXPECT_LT(took, 50) << "the judge waited for a runner that does not end by itself";
  auto last_stamp = [&](const std::string& prefix) {
    double last = -1;
    for (size_t at = r.log_tail.find(prefix); at != std::string::npos;
         at = r.log_tail.find(prefix, at + 1)) {
      last = std::max(last, std::stod(r.log_tail.substr(at + prefix.size())));
    }
    return last;
  };
  const double alive = last_stamp("candidate alive at ");
  const double gone = last_stamp("the runner is gone at monotonic ");
  ASSERT_GT(alive, 0) << r.log_tail;
  ASSERT_GT(gone, 0) << r.log_tail;
  EXPECT_LT(alive, gone) << r.log_tail;
}

// Time the candidate's process spends in a timed call counts, whatever that process says: the
// judge's clock is outside it.
TEST_F(EvaluateOnCpuTest, TimeTheCandidatesProcessSpendsCountsWhateverItReports) {
  EvaluatorOptions o = options();
  o.timing.enabled = true;
  const EvaluationReport r = run("candidate_add.py", "fake_extension_slow_when_timed.py", o);
  EXPECT_EQ(r.failure, FC::NONE) << r.detail << r.log_tail;
  EXPECT_GT(r.kernel_ms_mean, 4.0) << "each timed call sleeps 5 ms";
  EXPECT_LT(r.speedup, 0.5);
}

// A candidate that answers timed calls with an output it computed earlier is caught by the
// digests of the calls' outputs: its timing is no verdict.
TEST_F(EvaluateOnCpuTest, OutputsReplayedWhileTimedAreAntiCheat) {
  EvaluatorOptions o = options();
  o.timing.enabled = true;
  const EvaluationReport r = run("candidate_add.py", "fake_extension_replays_when_timed.py", o);
  EXPECT_EQ(r.failure, FC::ANTI_CHEAT) << r.detail << r.log_tail;
  const std::vector<std::string> found = checks(r);
  EXPECT_NE(std::find(found.begin(), found.end(), "timed-output-wrong"), found.end()) << r.detail;
}

// A task whose verdict needs no speedup (Task.wantTiming false: an rl phase under a binary
// reward) is not timed: a correct candidate never asks for the GPU alone. It still shares the
// GPU's turns, so it waits while another candidate is being timed.
TEST_F(EvaluateOnCpuTest, AnUntimedCandidateSharesTheGpuButNeverAsksForItAlone) {
  GpuTurns turns;
  EvaluatorOptions o = timed_options(&turns, 600);
  o.timed = false;
  ASSERT_TRUE(turns.enter_exclusive(GpuTurns::Patience(0)));  // another candidate is timed
  auto pending = std::async(std::launch::async,
                            [&] { return run("candidate_add.py", "fake_extension_ok.py", o); });
  EXPECT_EQ(pending.wait_for(std::chrono::seconds(5)), std::future_status::timeout)
      << "checked beside another candidate's timing";
  turns.leave_exclusive();
  const EvaluationReport r = pending.get();
  EXPECT_EQ(r.failure, FC::NONE) << r.detail << r.log_tail;
  EXPECT_TRUE(r.correct);
  EXPECT_EQ(turns.timings_waiting(), 0);
  EXPECT_EQ(phase_seconds(r.phases, "timing_turn"), -1) << r.phases;
  EXPECT_EQ(r.timing_trials, 0);
  EXPECT_TRUE(turns.enter_exclusive(GpuTurns::Patience(0)));  // its shared turn was left
}

TEST_F(EvaluateOnCpuTest, AnIncorrectCandidateDoesNotAskForTheGpuAlone) {
  GpuTurns turns;
  EvaluatorOptions o = timed_options(&turns, 600);
  o.sandbox.timeout_seconds = 60;
  ASSERT_TRUE(turns.enter_shared(GpuTurns::Patience(0)));
  // Asking would wait until the sandbox's timeout: judged incorrect instead.
  const EvaluationReport r = run("candidate_add.py", "fake_extension_wrong.py", o);
  EXPECT_EQ(r.failure, FC::INCORRECT) << r.detail << r.log_tail;
  EXPECT_EQ(phase_seconds(r.phases, "timing_turn"), -1) << r.phases;
  turns.leave_shared();
}

// A neighbour's misbehaviour (its GPU memory, its endless kernel) seen from the candidate it
// harms: a test-double extension that fails with CUDA's out-of-memory error until `until`, the
// moment the test's neighbour leaves the GPU, and computes the right answer after it.
class NeighbourTest : public EvaluateOnCpuTest {
 protected:
  using Clock = std::chrono::system_clock;
  std::string extension_failing_until(Clock::time_point until) {
    const double at = std::chrono::duration<double>(until.time_since_epoch()).count();
    const fs::path path =
        fs::temp_directory_path() / ("fake_extension_oom_until_" + std::to_string(::getpid()) +
                                     "_" + std::to_string(++files_) + ".py");
    std::ofstream(path) << "import time\n"
                        << "def fused(x, scale, bias, idx):\n"
                        << "    if time.time() < " << std::to_string(at) << ":\n"
                        << "        raise RuntimeError('CUDA out of memory. Tried to allocate 2.00 "
                           "GiB')\n"
                        << "    return x * scale + bias, idx.sum()\n";
    paths_.push_back(path);
    return path.string();
  }
  void TearDown() override {
    for (const auto& p : paths_) fs::remove(p);
  }
  static EvaluatorOptions with_turns(GpuTurns* turns, double turn_wait_seconds = 120) {
    EvaluatorOptions o = options();
    o.gpu_turns = turns;
    o.timing.turn_wait_seconds = turn_wait_seconds;
    return o;
  }
  static const StaticFinding* finding(const EvaluationReport& r, const std::string& check) {
    for (const auto& f : r.findings) {
      if (f.check == check) return &f;
    }
    return nullptr;
  }
  int files_ = 0;
  std::vector<fs::path> paths_;
};

TEST_F(NeighbourTest, AFailureBesideANeighbourIsJudgedAgainAloneAndThatVerdictStands) {
  // The candidate fails while the neighbour is there (until `leaves`). On a loaded machine the
  // first judging may reach forward only after that, and then it simply passes: the test tries
  // again with a longer stay, as the point is what happens to a failure met beside it.
  for (const int stay_seconds : {4, 20, 60}) {
    GpuTurns turns;
    GpuTurn neighbour(&turns);
    ASSERT_TRUE(neighbour.share(GpuTurns::Patience(0)));
    const auto leaves = Clock::now() + std::chrono::seconds(stay_seconds);
    const std::string extension = extension_failing_until(leaves);
    std::thread leave([&] {
      std::this_thread::sleep_until(leaves);
      neighbour.leave();
    });
    const EvaluationReport r = run("candidate_add.py", extension, with_turns(&turns));
    leave.join();
    EXPECT_TRUE(r.correct) << r.detail << r.log_tail;
    EXPECT_EQ(r.failure, FC::NONE);
    const StaticFinding* f = finding(r, "confirmed-alone");
    if (f == nullptr && r.correct) continue;  // first judged after the neighbour had left
    ASSERT_NE(f, nullptr);
    EXPECT_FALSE(f->fatal);
    EXPECT_NE(f->detail.find("resourceLimit"), std::string::npos) << f->detail;
    EXPECT_NE(f->detail.find("out of memory"), std::string::npos) << f->detail;
    return;
  }
  FAIL() << "the first judging never met the neighbour, even with it staying 60 s";
}

TEST_F(NeighbourTest, AFailureWithTheGpuToItselfStandsAtOnce) {
  GpuTurns turns;
  const std::string extension = extension_failing_until(Clock::now() + std::chrono::hours(1));
  const EvaluationReport r = run("candidate_add.py", extension, with_turns(&turns));
  EXPECT_EQ(r.failure, FC::RESOURCE_LIMIT) << r.detail << r.log_tail;
  EXPECT_EQ(finding(r, "confirmed-alone"), nullptr);
  EXPECT_EQ(finding(r, "not-confirmed-alone"), nullptr);
}

TEST_F(NeighbourTest, WithTheOptionOffAFailureBesideANeighbourStands) {
  GpuTurns turns;
  GpuTurn neighbour(&turns);
  ASSERT_TRUE(neighbour.share(GpuTurns::Patience(0)));
  EvaluatorOptions o = with_turns(&turns);
  o.confirm_failures_alone = false;
  const EvaluationReport r =
      run("candidate_add.py", extension_failing_until(Clock::now() + std::chrono::hours(1)), o);
  EXPECT_EQ(r.failure, FC::RESOURCE_LIMIT) << r.detail << r.log_tail;
  EXPECT_EQ(finding(r, "confirmed-alone"), nullptr);
}

TEST_F(NeighbourTest, AWrongAnswerIsTheCandidatesOwnAndIsNotJudgedAgain) {
  GpuTurns turns;
  GpuTurn neighbour(&turns);
  ASSERT_TRUE(neighbour.share(GpuTurns::Patience(0)));
  // The neighbour never leaves: judging again alone would wait for it and say so.
  const EvaluationReport r =
      run("candidate_add.py", "fake_extension_wrong.py", with_turns(&turns, 1));
  EXPECT_EQ(r.failure, FC::INCORRECT) << r.detail << r.log_tail;
  EXPECT_EQ(finding(r, "confirmed-alone"), nullptr);
  EXPECT_EQ(finding(r, "not-confirmed-alone"), nullptr);
}

TEST_F(NeighbourTest, NoTurnAloneInTimeKeepsTheFirstVerdictAndSaysSo) {
  GpuTurns turns;
  GpuTurn neighbour(&turns);  // holds the GPU past the patience (a hung candidate)
  ASSERT_TRUE(neighbour.share(GpuTurns::Patience(0)));
  const EvaluationReport r =
      run("candidate_add.py", extension_failing_until(Clock::now() + std::chrono::hours(1)),
          with_turns(&turns, 1));
  EXPECT_EQ(r.failure, FC::RESOURCE_LIMIT) << r.detail << r.log_tail;
  const StaticFinding* f = finding(r, "not-confirmed-alone");
  ASSERT_NE(f, nullptr);
  EXPECT_NE(f->detail.find("did not come free"), std::string::npos) << f->detail;
}

TEST(NeighbourCausesTest, OnlyFailuresAnotherEvaluationCanCauseAreJudgedAgain) {
  for (FC f : {FC::RUNTIME_ERROR, FC::IMPORT_ERROR, FC::CRASHED, FC::TIMEOUT, FC::RESOURCE_LIMIT}) {
    EXPECT_TRUE(a_neighbour_can_cause(f)) << failure_class_name(f);
  }
  for (FC f : {FC::NONE, FC::COMPILE_ERROR, FC::INCORRECT, FC::SHAPE_MISMATCH, FC::ANTI_CHEAT,
               FC::STATIC_CHECK, FC::INTERNAL_ERROR, FC::SANDBOX_VIOLATION}) {
    EXPECT_FALSE(a_neighbour_can_cause(f)) << failure_class_name(f);
  }
  EXPECT_EQ(failure_class_name(FC::RUNTIME_ERROR), "runtimeError");
  EXPECT_EQ(failure_class_from_name(failure_class_name(FC::WORKER_LOST)), FC::WORKER_LOST);
}

TEST(EvaluatorPrestartTest, KeepsTheGivenNumberStartedAhead) {
  EvaluatorPrestart prestart(2);
  SandboxSpec spec;
  spec.argv = {"/usr/bin/python3", "-c",
               "import sys; print('READY', flush=True); print(sys.stdin.read())"};
  spec.input_pipe = true;
  spec.memory_limit_mb = 1024;
  std::vector<std::unique_ptr<SandboxProcess>> taken;
  auto take = [&] {
    auto p = prestart.take(spec);
    EXPECT_TRUE(p.ok()) << p.status().to_string();
    if (p.ok()) taken.push_back(std::move(p).value());
  };
  take();  // nothing was ready: started now, and two more behind it
  EXPECT_EQ(prestart.warm_takes(), 0);
  EXPECT_EQ(prestart.ready(), 2);
  take();
  take();
  EXPECT_EQ(prestart.warm_takes(), 2);
  EXPECT_EQ(prestart.ready(), 2);
  // Other limits (the runner's spec beside the judge's): two more started ahead for them, and
  // the first spec's stay.
  spec.memory_limit_mb = 2048;
  take();
  EXPECT_EQ(prestart.warm_takes(), 2);
  EXPECT_EQ(prestart.ready(), 4);
  // A third spec: the least recently taken one's processes are of no use any more.
  spec.memory_limit_mb = 3072;
  take();
  EXPECT_EQ(prestart.warm_takes(), 2);
  EXPECT_EQ(prestart.ready(), 4);
  ASSERT_EQ(taken.size(), 5u);
  for (size_t i = 0; i < taken.size(); ++i) {
    ASSERT_TRUE(taken[i]->wait_for_line("READY", 30).ok());
    ASSERT_TRUE(taken[i]->send_input("job " + std::to_string(i)).ok());
    SandboxResult r = taken[i]->wait(30);
    EXPECT_TRUE(r.succeeded()) << r.stderr_text;
    EXPECT_EQ(r.stdout_text, "job " + std::to_string(i) + "\n");
  }
}

TEST_F(EvaluateOnCpuTest, ProcessesStartedAheadJudgeLikeFreshOnes) {
  EvaluatorPrestart prestart;
  EvaluationReport first = run("candidate_add.py", "fake_extension_ok.py", options(), &prestart);
  EvaluationReport second =
      run("candidate_add.py", "fake_extension_wrong.py", options(), &prestart);
  EvaluationReport third =
      run("candidate_add.py", "fake_extension_mutates.py", options(), &prestart);
  // The first pair had to start; the others found a judge and a runner started ahead.
  EXPECT_EQ(prestart.warm_takes(), 4);
  EXPECT_EQ(first.failure, FC::NONE) << first.detail << first.log_tail;
  EXPECT_TRUE(first.correct);
  EXPECT_EQ(second.failure, FC::INCORRECT) << second.detail << second.log_tail;
  EXPECT_EQ(third.failure, FC::ANTI_CHEAT) << third.detail << third.log_tail;
  // Torch was imported before the work came: reported, but not part of the evaluation's time.
  EXPECT_NE(second.phases.find("import="), std::string::npos) << second.phases;
  EXPECT_NE(second.phases.find("load="), std::string::npos) << second.phases;
}

TEST_F(EvaluateOnCpuTest, AProcessStartedForOtherLimitsIsNotUsed) {
  EvaluatorPrestart prestart;
  EvaluatorOptions o = options();
  run("candidate_add.py", "fake_extension_ok.py", o, &prestart);
  o.sandbox.memory_limit_mb = 4096;
  EvaluationReport r = run("candidate_add.py", "fake_extension_ok.py", o, &prestart);
  EXPECT_EQ(prestart.warm_takes(), 0);
  EXPECT_TRUE(r.correct) << r.detail << r.log_tail;
}

TEST(KernelCheckAvailableTest, CuptiNeedsTheLaunchProbe) {
  EXPECT_TRUE(kernel_check_available(KernelCheck::kProfiler, "").ok());
  EXPECT_TRUE(kernel_check_available(KernelCheck::kCupti, "/opt/dice/dice_launch_probe.so").ok());
  Status missing = kernel_check_available(KernelCheck::kCupti, "");
  EXPECT_FALSE(missing.ok());
  EXPECT_NE(missing.message().find("reward.kernel_check: cupti"), std::string::npos)
      << missing.message();
  EXPECT_NE(missing.message().find("DICE_CUPTI_ROOT"), std::string::npos) << missing.message();
  EXPECT_TRUE(kernel_check_available(KernelCheck::kAuto, "").ok());
}

TEST(KernelCheckAvailableTest, AutoTakesTheLaunchProbeWhereTheBuildHasIt) {
  EXPECT_EQ(resolve_kernel_check(KernelCheck::kAuto, "/opt/dice/dice_launch_probe.so"),
            KernelCheck::kCupti);
  EXPECT_EQ(resolve_kernel_check(KernelCheck::kAuto, ""), KernelCheck::kProfiler);
  EXPECT_EQ(resolve_kernel_check(KernelCheck::kProfiler, "/opt/dice/dice_launch_probe.so"),
            KernelCheck::kProfiler);
  EXPECT_EQ(resolve_kernel_check(KernelCheck::kCupti, ""), KernelCheck::kCupti);
  EXPECT_EQ(EvaluatorOptions().kernel_check, KernelCheck::kAuto);
}

// The launch probe goes into the sandbox with the script and is loaded by the process started
// ahead. On the CPU the kernel check itself does not run, but a probe that does not load is
// reported in every verdict, so an operator who asked for cupti sees why it is not in use.
TEST_F(EvaluateOnCpuTest, TheLaunchProbeLoadsInTheProcessStartedAhead) {
  if (std::string(DICE_LAUNCH_PROBE_PATH).empty()) {
    GTEST_SKIP() << "this build has no launch probe (CUPTI not found at configure time)";
  }
  EvaluatorPrestart prestart;
  EvaluatorOptions o = options();
  o.kernel_check = KernelCheck::kCupti;
  for (int i = 0; i < 2; ++i) {
    EvaluationReport r = run("candidate_add.py", "fake_extension_ok.py", o, &prestart);
    EXPECT_TRUE(r.correct) << r.detail << r.log_tail;
    EXPECT_TRUE(r.findings.empty()) << r.findings[0].check << ": " << r.findings[0].detail;
  }
  EXPECT_EQ(prestart.warm_takes(), 2);  // the second evaluation's judge and runner
}

TEST_F(EvaluateOnCpuTest, ALaunchProbeThatDoesNotLoadIsReportedAndJudgingGoesOn) {
  const fs::path bogus = fs::temp_directory_path() / "dice_evaluator_test_not_a_library.so";
  {
    std::ofstream out(bogus);
    out << "not an ELF file\n";
  }
  EvaluatorOptions o = options();
  o.kernel_check = KernelCheck::kCupti;
  o.launch_probe = bogus.string();
  EvaluationReport r = run("candidate_add.py", "fake_extension_ok.py", o);
  fs::remove(bogus);
  EXPECT_TRUE(r.correct) << r.detail << r.log_tail;
  ASSERT_EQ(r.findings.size(), 1u);
  EXPECT_EQ(r.findings[0].check, "launch-probe-unavailable");
  EXPECT_FALSE(r.findings[0].fatal);
}

TEST_F(EvaluateOnCpuTest, AnEvaluatorThatCannotStartIsAnInternalError) {
  EvaluatorPrestart prestart;
  EvaluatorOptions o = options();
  o.python = "/bin/false";  // exits at once, never ready
  for (int i = 0; i < 2; ++i) {
    EvaluationReport r = run("candidate_add.py", "fake_extension_ok.py", o, &prestart);
    EXPECT_EQ(r.failure, FC::INTERNAL_ERROR);
    EXPECT_NE(r.detail.find("did not start"), std::string::npos) << r.detail;
  }
}

// Tensors larger than the file-size limit cross between the judge and the runner: the judge
// makes every memfd (its limit is its memory limit), and the runner only fills them.
TEST_F(EvaluateOnCpuTest, OutputsLargerThanTheFileSizeLimitCross) {
  EvaluatorOptions o = options();
  o.sandbox.max_output_mb = 1;  // 8 MiB inputs and outputs
  fs::path dir = fs::path(DICE_REWARD_TEST_DIR) / "evaluate_fixtures";
  CompileOutcome module;
  module.module_name = "big_ext";
  module.module_path = (dir / "fake_extension_big_ok.py").string();
  auto r = evaluate_candidate(
      {read_file(dir / "reference_big.py"), {}, read_file(dir / "candidate_big.py"), {module}, {}},
      o);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(r->failure, FC::NONE) << r->detail << r->log_tail;
  EXPECT_TRUE(r->correct);
}

// A sandbox layer that cannot be set up (here: a path the root must hold is missing) means
// nothing runs, and the verdict says so: never a run without the layer.
TEST_F(EvaluateOnCpuTest, ASandboxThatCannotBeSetUpRunsNothingAndSaysSo) {
  EvaluatorOptions o = options();
  o.sandbox.read_only_paths = {"/nonexistent/dice-evaluator-test"};
  EvaluatorPrestart prestart;
  for (EvaluatorPrestart* p : {static_cast<EvaluatorPrestart*>(nullptr), &prestart}) {
    EvaluationReport r = run("candidate_add.py", "fake_extension_ok.py", o, p);
    EXPECT_EQ(r.failure, FC::SANDBOX_UNAVAILABLE) << r.detail << r.log_tail;
    EXPECT_FALSE(r.correct);
    EXPECT_NE(r.detail.find("/nonexistent/dice-evaluator-test"), std::string::npos) << r.detail;
  }
}

// Whatever the candidate prints, a result line included (with any nonce it could guess), the
// verdict comes from the judge's output alone.
TEST_F(EvaluateOnCpuTest, AResultLineThatTheCandidatePrintsIsNotAVerdict) {
  EvaluationReport r = run("candidate_add.py", "fake_extension_forges.py");
  EXPECT_EQ(r.failure, FC::INCORRECT) << r.detail << r.log_tail;
  EXPECT_FALSE(r.correct);
  EXPECT_NE(r.log_tail.find("[runner]"), std::string::npos) << r.log_tail;
}

// The candidate runs in a process of its own: the judge's files (the reference, the nonce) are
// not where it runs, and nothing it does to its own process reaches the comparison.
TEST_F(EvaluateOnCpuTest, TheCandidatesProcessHasNoneOfTheJudgesFiles) {
  EvaluationReport r = run("candidate_add.py", "fake_extension_looks_around.py");
  EXPECT_EQ(r.failure, FC::INCORRECT) << r.detail << r.log_tail;
  EXPECT_NE(r.log_tail.find("no reference.py here; no nonce here"), std::string::npos)
      << r.log_tail;
}

// Test double of the driver's account of GPU memory: every process descending from this test
// holds `each` bytes (the evaluator sums the runner's tree only), on a GPU of `total` bytes.
class EveryProcessHoldsTestDouble : public GpuMemoryReader {
 public:
  EveryProcessHoldsTestDouble(std::uint64_t each, std::uint64_t total)
      : each_(each), total_(total) {}
  Result<std::vector<std::pair<pid_t, std::uint64_t>>> process_memory(int) override {
    std::vector<std::pair<pid_t, std::uint64_t>> held;
    for (pid_t pid : process_tree(getpid())) held.emplace_back(pid, each_);
    return held;
  }
  Result<std::uint64_t> total_memory(int) override { return total_; }

 private:
  const std::uint64_t each_, total_;
};

constexpr std::uint64_t kGiB = std::uint64_t{1} << 30;

// The runner's GPU memory is read from outside its process (gpu_memory_watch.h): a tree over its
// budget is killed and judged resourceLimit, naming what it held; under it the verdict is the
// judge's.
TEST_F(EvaluateOnCpuTest, ACandidateOverItsGpuMemoryBudgetIsKilledAndJudgedResourceLimit) {
  EvaluatorOptions o = options();
  o.gpu_memory_mb = 1024;
  o.gpu_memory_reader = std::make_shared<EveryProcessHoldsTestDouble>(2 * kGiB, 80 * kGiB);
  EvaluationReport r = run("candidate_add.py", "fake_extension_ok.py", o);
  EXPECT_EQ(r.failure, FC::RESOURCE_LIMIT) << r.detail << r.log_tail;
  EXPECT_FALSE(r.correct);
  EXPECT_NE(r.detail.find("over its budget of 1024 MiB"), std::string::npos) << r.detail;
  ASSERT_FALSE(r.findings.empty());
  EXPECT_EQ(r.findings.back().check, "gpu-memory-over-budget");
  EXPECT_TRUE(r.findings.back().fatal);
}

TEST_F(EvaluateOnCpuTest, UnderItsGpuMemoryBudgetTheVerdictIsTheJudges) {
  EvaluatorOptions o = options();
  o.gpu_memory_mb = 1024;
  o.gpu_memory_reader = std::make_shared<EveryProcessHoldsTestDouble>(100 << 20, 80 * kGiB);
  EvaluationReport r = run("candidate_add.py", "fake_extension_ok.py", o);
  EXPECT_EQ(r.failure, FC::NONE) << r.detail << r.log_tail;
  EXPECT_TRUE(r.correct);
}

// The default budget is half of the slot's share: 80 GiB over 4 slots leaves 10 GiB a candidate.
TEST_F(EvaluateOnCpuTest, TheDefaultGpuMemoryBudgetIsHalfTheSlotsShare) {
  EvaluatorOptions o = options();
  o.gpu_memory_mb = 0;
  o.slots_on_gpu = 4;
  o.gpu_memory_reader = std::make_shared<EveryProcessHoldsTestDouble>(12 * kGiB, 80 * kGiB);
  EvaluationReport over = run("candidate_add.py", "fake_extension_ok.py", o);
  EXPECT_EQ(over.failure, FC::RESOURCE_LIMIT) << over.detail << over.log_tail;
  EXPECT_NE(over.detail.find("over its budget of 10240 MiB"), std::string::npos) << over.detail;
  o.gpu_memory_mb = -1;  // no bound
  EvaluationReport unbounded = run("candidate_add.py", "fake_extension_ok.py", o);
  EXPECT_EQ(unbounded.failure, FC::NONE) << unbounded.detail << unbounded.log_tail;
}

}  // namespace
}  // namespace dice
