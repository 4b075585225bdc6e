// Unit tests of the slurm backend's readers (cluster/slurm_query.h) on output captured from
// Debian 12's Slurm 22.05, and of its step files.
#include "cluster/slurm_query.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "common/remove_tree.h"

namespace dice::cluster {
namespace {

TEST(SlurmQueryTest, FindsTheJobLineAndItsState) {
  std::string text = "811|CANCELLED|None|vm\n812|RUNNING|None|gpu[1-2]\n";
  SlurmJobInfo job = parse_squeue_job(text, "812");
  EXPECT_TRUE(job.known);
  EXPECT_EQ(job.state, "RUNNING");
  EXPECT_EQ(job.reason, "None");
  EXPECT_EQ(job.nodes, "gpu[1-2]");
  job = parse_squeue_job("813|PENDING|Resources|\n", "813");
  EXPECT_TRUE(job.known);
  EXPECT_EQ(job.reason, "Resources");
  EXPECT_EQ(job.nodes, "");
  EXPECT_FALSE(parse_squeue_job(text, "81").known);  // no prefix match
  EXPECT_FALSE(parse_squeue_job("", "812").known);
  EXPECT_FALSE(parse_squeue_job("garbage\n", "812").known);
}

TEST(SlurmQueryTest, StepsWithoutTheBatchStep) {
  std::vector<SlurmStep> steps = parse_squeue_steps(
      "3.0|learner-0|vm\n3.1|rollout-1|vm\n3.batch|batch|vm\n3.extern|extern|vm\n");
  ASSERT_EQ(steps.size(), 2u);
  EXPECT_EQ(steps[0].id, "3.0");
  EXPECT_EQ(steps[0].name, "learner-0");
  EXPECT_EQ(steps[1].name, "rollout-1");
  EXPECT_EQ(steps[1].nodes, "vm");
}

TEST(SlurmQueryTest, ActiveStates) {
  for (const char* state : {"PENDING", "RUNNING", "COMPLETING", "SUSPENDED", "CONFIGURING"}) {
    EXPECT_TRUE(slurm_state_active(state)) << state;
  }
  for (const char* state : {"COMPLETED", "CANCELLED", "FAILED", "TIMEOUT", "NODE_FAIL", ""}) {
    EXPECT_FALSE(slurm_state_active(state)) << state;
  }
}

TEST(SlurmQueryTest, StepFileReadsAndABadOneIsCorruptionNamingTheLine) {
  std::string pattern = (std::filesystem::temp_directory_path() / "dice_step_XXXXXX").string();
  std::string dir = mkdtemp(pattern.data());
  std::ofstream(dir + "/rollout-0")
      << "state restarting\nrestarts 2\nstarted_at 1764464523\nlast_exit exit 137\n";
  ServiceState s;
  ASSERT_TRUE(read_step_file(dir + "/rollout-0", &s).ok());
  EXPECT_EQ(s.state, ServiceRunState::kRestarting);
  EXPECT_EQ(s.restarts, 2);
  EXPECT_DOUBLE_EQ(s.started_at, 1764464523);
  EXPECT_EQ(s.last_exit, "exit 137");

  EXPECT_EQ(read_step_file(dir + "/none", &s).code(), StatusCode::kNotFound);
  std::ofstream(dir + "/bad") << "state running\nrestarts many\n";
  Status bad = read_step_file(dir + "/bad", &s);
  EXPECT_EQ(bad.code(), StatusCode::kCorruption);
  EXPECT_NE(bad.message().find(dir + "/bad:2: restarts 'many'"), std::string::npos)
      << bad.message();
  EXPECT_TRUE(remove_tree(dir).ok());
}

}  // namespace
}  // namespace dice::cluster
