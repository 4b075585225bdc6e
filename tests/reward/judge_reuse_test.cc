// A judge process that serves one candidate after another (EvaluatorOptions::judge_jobs): each
// verdict is the one a fresh judge gives, what a job changes does not reach the next, and a judge
// that cannot put itself back, or has served its jobs, is replaced. The real sandboxed judge and
// runner on the CPU, with test-double extension modules (evaluate_fixtures); skipped without
// torch in /usr/bin/python3.
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "common/read_file.h"
#include "reward/evaluate/evaluator.h"
#include "reward/evaluate/gpu_turns.h"

namespace dice {
namespace {

namespace fs = std::filesystem;
using FC = schema::FailureClass;

std::string read_fixture(const std::string& name) {
  auto text = read_file((fs::path(DICE_REWARD_TEST_DIR) / "evaluate_fixtures" / name).string());
  EXPECT_TRUE(text.ok()) << text.status().to_string();
  return text.ok() ? *text : "";
}

class JudgeReuseTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::system("/usr/bin/python3 -c 'import torch' 2>/dev/null") != 0) {
      GTEST_SKIP() << "/usr/bin/python3 has no torch (apt-get install python3-torch)";
    }
  }
  static EvaluatorOptions options(int judge_jobs) {
    EvaluatorOptions o;
    o.python = "/usr/bin/python3";
    o.device = "cpu";
    o.trials = 2;
    o.seed = 7;  // the same inputs for a fresh judge and a reused one
    o.sandbox.timeout_seconds = 120;
    o.sandbox.memory_limit_mb = 8192;
    o.judge_jobs = judge_jobs;
    return o;
  }
  // `prelude`: lines put before reference_add.py's, run as the reference loads.
  static EvaluationReport judge(const std::string& extension, const EvaluatorOptions& o,
                                EvaluatorPrestart* prestart, const std::string& prelude = "") {
    CompileOutcome module;
    module.module_name = "fused_ext";
    module.module_path =
        (fs::path(DICE_REWARD_TEST_DIR) / "evaluate_fixtures" / extension).string();
    auto r = evaluate_candidate({prelude + read_fixture("reference_add.py"),
                                 {},
                                 read_fixture("candidate_add.py"),
                                 {module},
                                 {}},
                                o, prestart);
    EXPECT_TRUE(r.ok()) << r.status().to_string();
    return r.ok() ? r.value() : EvaluationReport{};
  }
};

TEST_F(JudgeReuseTest, OneJudgeJudgesCandidatesInTurnAsFreshOnesWould) {
  const std::vector<std::string> extensions = {"fake_extension_ok.py", "fake_extension_wrong.py",
                                               "fake_extension_mutates.py",
                                               "fake_extension_wrong.py", "fake_extension_ok.py"};
  std::vector<EvaluationReport> fresh;
  for (const auto& e : extensions) fresh.push_back(judge(e, options(1), nullptr));
  EvaluatorPrestart prestart;
  std::vector<EvaluationReport> reused;
  for (const auto& e : extensions) reused.push_back(judge(e, options(4), &prestart));
  ASSERT_EQ(reused.size(), extensions.size());
  for (size_t i = 0; i < extensions.size(); ++i) {
    SCOPED_TRACE(extensions[i] + " as job " + std::to_string(i + 1));
    EXPECT_EQ(reused[i].failure, fresh[i].failure) << reused[i].detail << reused[i].log_tail;
    EXPECT_EQ(reused[i].correct, fresh[i].correct);
    EXPECT_EQ(reused[i].max_abs_error, fresh[i].max_abs_error);
    EXPECT_EQ(fresh[i].judge_job, 1);
  }
  EXPECT_EQ(reused[0].failure, FC::NONE);
  EXPECT_EQ(reused[1].failure, FC::INCORRECT);
  EXPECT_EQ(reused[2].failure, FC::ANTI_CHEAT);
  // Four jobs for the first judge, then a fresh one.
  EXPECT_EQ(reused[0].judge_job, 1);
  EXPECT_EQ(reused[1].judge_job, 2);
  EXPECT_EQ(reused[2].judge_job, 3);
  EXPECT_EQ(reused[3].judge_job, 4);
  EXPECT_FALSE(reused[3].judge_serves_again);
  EXPECT_EQ(reused[4].judge_job, 1);
  // torch's import is the first job's phase only.
  EXPECT_GT(std::stod(reused[0].phases.substr(reused[0].phases.find("import=") + 7)), 0);
  EXPECT_EQ(std::stod(reused[1].phases.substr(reused[1].phases.find("import=") + 7)), 0);
  // Given back after jobs 1-3 of the first judge and job 1 of the second.
  EXPECT_EQ(prestart.given_back(), 4);
}

// A reference may change torch's process-wide settings as it loads (a task may, for its own
// reasons); the next job's reference, which holds only under the defaults, must meet them.
TEST_F(JudgeReuseTest, TorchSettingsAReferenceChangesDoNotReachTheNextJob) {
  EvaluatorPrestart prestart;
  EvaluationReport changes = judge("fake_extension_ok.py", options(4), &prestart,
                                   "import torch\n"
                                   "torch.set_default_dtype(torch.float64)\n"
                                   "torch.backends.cudnn.benchmark = True\n");
  ASSERT_TRUE(changes.judge_serves_again) << changes.detail << changes.log_tail;
  EvaluationReport next =
      judge("fake_extension_ok.py", options(4), &prestart,
            "import torch\n"
            "if torch.get_default_dtype() != torch.float32 or torch.backends.cudnn.benchmark:\n"
            "    raise RuntimeError('torch settings are not the defaults: %s, cudnn.benchmark=%s'"
            " % (torch.get_default_dtype(), torch.backends.cudnn.benchmark))\n");
  EXPECT_EQ(next.judge_job, 2);
  EXPECT_EQ(next.failure, FC::NONE) << next.detail << next.log_tail;
  EXPECT_TRUE(next.correct);
}

// A reference that leaves torch so that the judge cannot put its settings back (here:
// set_default_dtype replaced): the judge ends rather than serve another job.
TEST_F(JudgeReuseTest, AJudgeThatCannotPutItselfBackIsReplaced) {
  EvaluatorPrestart prestart;
  EvaluationReport broken = judge("fake_extension_ok.py", options(4), &prestart,
                                  "import torch\n"
                                  "def _broken(dtype):\n"
                                  "    raise RuntimeError('set_default_dtype is broken')\n"
                                  "torch.set_default_dtype = _broken\n");
  EXPECT_FALSE(broken.judge_serves_again);
  EXPECT_NE(broken.log_tail.find("ends after this job"), std::string::npos) << broken.log_tail;
  EvaluationReport next = judge("fake_extension_ok.py", options(4), &prestart);
  EXPECT_EQ(next.judge_job, 1);
  EXPECT_EQ(next.failure, FC::NONE) << next.detail << next.log_tail;
  EXPECT_EQ(prestart.given_back(), 1);  // the fresh one only
}

// A judge that ends mid-job (here its reference ends the process as it loads) or runs past its
// time is not given back: the next candidate gets a fresh one, started as soon as the first was
// lost.
TEST_F(JudgeReuseTest, AJudgeThatDiesOrTimesOutIsNotGivenBack) {
  EvaluatorPrestart prestart;
  EvaluatorOptions o = options(4);
  EvaluationReport died = judge("fake_extension_ok.py", o, &prestart, "import os\nos._exit(3)\n");
  EXPECT_FALSE(died.correct);
  EXPECT_FALSE(died.judge_serves_again);
  EXPECT_EQ(prestart.given_back(), 0);
  EXPECT_EQ(prestart.ready(), 2);  // a runner started ahead, and the lost judge's successor
  EvaluationReport next = judge("fake_extension_ok.py", o, &prestart);
  EXPECT_EQ(next.judge_job, 1);
  EXPECT_TRUE(next.correct) << next.detail << next.log_tail;
  o.sandbox.timeout_seconds = 5;
  EvaluationReport slow =
      judge("fake_extension_ok.py", o, &prestart, "import time\ntime.sleep(600)\n");
  EXPECT_EQ(slow.failure, FC::TIMEOUT) << slow.detail;
  EXPECT_FALSE(slow.judge_serves_again);
  o.sandbox.timeout_seconds = 120;
  EvaluationReport after = judge("fake_extension_ok.py", o, &prestart);
  EXPECT_EQ(after.judge_job, 1);
  EXPECT_TRUE(after.correct) << after.detail << after.log_tail;
}

// The timing protocol (a turn at the GPU, the runner's end before the reference is timed) holds
// for every job of a judge, not only its first.
TEST_F(JudgeReuseTest, EveryJobOfAJudgeIsTimedWithTheGpuToItself) {
  GpuTurns turns;
  EvaluatorOptions o = options(4);
  o.timing.enabled = true;
  o.timing.turn_wait_seconds = 60;
  o.gpu_turns = &turns;
  EvaluatorPrestart prestart;
  for (int job = 1; job <= 3; ++job) {
    EvaluationReport r = judge("fake_extension_ok.py", o, &prestart);
    SCOPED_TRACE("job " + std::to_string(job));
    EXPECT_EQ(r.judge_job, job);
    EXPECT_EQ(r.failure, FC::NONE) << r.detail << r.log_tail;
    EXPECT_TRUE(r.correct);
    EXPECT_GT(r.timing_trials, 0);
    EXPECT_GT(r.reference_ms_mean, 0);
    EXPECT_NE(r.phases.find("timing_turn="), std::string::npos) << r.phases;
  }
}

// Without an EvaluatorPrestart there is nothing to give a judge back to: each is fresh.
TEST_F(JudgeReuseTest, WithoutAPrestartEveryJudgeIsFresh) {
  for (int i = 0; i < 2; ++i) {
    EvaluationReport r = judge("fake_extension_ok.py", options(4), nullptr);
    EXPECT_EQ(r.judge_job, 1);
    EXPECT_TRUE(r.correct) << r.detail << r.log_tail;
  }
}

}  // namespace
}  // namespace dice
