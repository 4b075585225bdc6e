// Every sandboxed process is the OOM killer's first choice (kSandboxOomScoreAdj), isolated or
// not, and keeps it across exec and fork: when runs together exhaust the host's memory, a
// candidate or a compiler goes, not the reward worker that started them.
#include <unistd.h>

#include <fstream>
#include <string>

#include "reward/sandbox/sandbox.h"
#include "reward/sandbox/sandbox_child.h"

#include <gtest/gtest.h>

namespace dice {
namespace {

// The score of the run's command and of a process it forks, one per line.
std::string scores_in_run(bool isolate) {
  SandboxSpec spec;
  spec.argv = {"/bin/sh", "-c", "cat /proc/self/oom_score_adj; (cat /proc/self/oom_score_adj)"};
  spec.isolate = isolate;
  spec.memory_limit_mb = 1024;
  auto run = run_sandboxed(spec);
  EXPECT_TRUE(run.ok()) << run.status().to_string();
  if (!run.ok()) return "";
  EXPECT_TRUE(run->succeeded()) << run->stderr_text;
  return run->stdout_text;
}

std::string own_score() {
  std::ifstream in("/proc/self/oom_score_adj");
  std::string score;
  in >> score;
  return score;
}

TEST(SandboxOomScoreTest, ARunWithoutIsolationIsTheFirstToGo) {
  const std::string want = std::string(kSandboxOomScoreAdj) + "\n";
  EXPECT_EQ(scores_in_run(false), want + want);
  // The worker's own score is not changed by starting a run.
  EXPECT_NE(own_score(), kSandboxOomScoreAdj);
}

TEST(SandboxOomScoreTest, AnIsolatedRunIsTheFirstToGo) {
  if (geteuid() != 0) GTEST_SKIP() << "isolated runs need root here (the sandbox's namespaces)";
  const std::string want = std::string(kSandboxOomScoreAdj) + "\n";
  EXPECT_EQ(scores_in_run(true), want + want);
  EXPECT_NE(own_score(), kSandboxOomScoreAdj);
}

}  // namespace
}  // namespace dice
