// Unit tests of the service plan (cluster/service_plan.h): instances per role and GPU, worker
// indices across nodes, command lines, and where executables are looked up.
#include "cluster/service_plan.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "common/remove_tree.h"

namespace dice::cluster {
namespace {

std::string make_temp_dir() {
  std::string pattern = (std::filesystem::temp_directory_path() / "dice_plan_XXXXXX").string();
  return mkdtemp(pattern.data());
}

// An executable file at `path` (its folders created).
void make_executable(const std::string& path) {
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  std::ofstream(path) << "#!/bin/sh\n";
  chmod(path.c_str(), 0755);
}

class ServicePlanTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = make_temp_dir();
    for (const char* role : {"learner", "rollout", "reward"}) {
      make_executable(dir_ + "/bin/dice-" + std::string(role));
    }
    options_.local.bin_dir = dir_ + "/bin";
  }
  void TearDown() override { EXPECT_TRUE(remove_tree(dir_).ok()); }

  std::string dir_;
  ClusterOptions options_;
};

TEST_F(ServicePlanTest, OneWorkerPerGpuEntryIndexedAcrossNodes) {
  options_.nodes = {
      NodeOptions{"a",
                  {NodeRole::kLearner, NodeRole::kRollout},
                  {{"learner", {0, 1}}, {"rollout", {2, 3}}}},
      NodeOptions{
          "b", {NodeRole::kRollout, NodeRole::kReward}, {{"rollout", {0}}, {"reward", {1}}}}};
  PlanInputs inputs{"/abs/run.yaml", {"learner.optimizer.lr=2e-6"}, "r9", ""};
  Result<std::vector<ServiceSpec>> plan = plan_services(options_, inputs);
  ASSERT_TRUE(plan.ok()) << plan.status().to_string();
  ASSERT_EQ(plan->size(), 5u);
  std::vector<std::string> names;
  for (const auto& s : *plan) names.push_back(s.name + "@" + s.node);
  EXPECT_EQ(names, (std::vector<std::string>{"learner-0@a", "rollout-0@a", "rollout-1@a",
                                             "rollout-2@b", "reward-0@b"}));
  EXPECT_EQ((*plan)[0].gpus, (std::vector<int>{0, 1}));  // the learner takes all of its GPUs
  EXPECT_EQ((*plan)[2].gpus, (std::vector<int>{3}));
  EXPECT_EQ((*plan)[3].gpus, (std::vector<int>{0}));
  // Each backend starts a service with CUDA_VISIBLE_DEVICES naming exactly its GPUs.
  EXPECT_EQ(visible_devices((*plan)[0]), "0,1");
  EXPECT_EQ(visible_devices((*plan)[2]), "3");
  ServiceSpec no_gpu;
  EXPECT_EQ(visible_devices(no_gpu), "");
  EXPECT_EQ((*plan)[3].executable, dir_ + "/bin/dice-rollout");
  EXPECT_EQ((*plan)[3].args, (std::vector<std::string>{
                                 "--config", "/abs/run.yaml", "--run-id", "r9", "--worker-index",
                                 "2", "--metrics-port", "9202", "learner.optimizer.lr=2e-6"}));
  // The learner, and only it, continues its run when the supervisor starts it again.
  EXPECT_EQ((*plan)[0].args,
            (std::vector<std::string>{"--config", "/abs/run.yaml", "--run-id", "r9",
                                      "--worker-index", "0", "--metrics-port", "9100", "--resume",
                                      "learner.optimizer.lr=2e-6"}));
}

TEST_F(ServicePlanTest, EachServiceGetsItsOwnMetricsPort) {
  options_.nodes = {
      NodeOptions{
          "a", {NodeRole::kLearner, NodeRole::kRollout}, {{"learner", {0}}, {"rollout", {1}}}},
      NodeOptions{
          "b", {NodeRole::kRollout, NodeRole::kReward}, {{"rollout", {0}}, {"reward", {1, 2}}}}};
  options_.learner.metrics_port = 7000;
  options_.worker_metrics.rollout_base_port = 7100;
  options_.worker_metrics.reward_base_port = 7200;
  Result<std::vector<ServiceSpec>> plan =
      plan_services(options_, PlanInputs{"/c.yaml", {}, "r", ""});
  ASSERT_TRUE(plan.ok()) << plan.status().to_string();
  std::vector<std::string> ports;
  for (const auto& s : *plan) {
    auto flag = std::find(s.args.begin(), s.args.end(), "--metrics-port");
    ASSERT_NE(flag, s.args.end()) << s.name;
    ASSERT_NE(flag + 1, s.args.end()) << s.name;
    EXPECT_EQ(*(flag + 1), std::to_string(s.metrics_port)) << s.name;
    ports.push_back(s.name + ":" + *(flag + 1));
  }
  EXPECT_EQ(ports, (std::vector<std::string>{"learner-0:7000", "rollout-0:7100", "rollout-1:7101",
                                             "reward-0:7200", "reward-1:7201"}));

  // Base 0: every worker of that role picks any free port.
  options_.worker_metrics.reward_base_port = 0;
  EXPECT_EQ(metrics_port(options_, NodeRole::kReward, 1), 0);
  EXPECT_EQ(metrics_port(options_, NodeRole::kRollout, 1), 7101);
}

TEST_F(ServicePlanTest, ExecutableOverridesAndLookupOrder) {
  // bin_dir beats the folder of dice-cluster.
  make_executable(dir_ + "/build/cluster/dice-learner");
  std::string self = dir_ + "/build/cluster/dice-cluster";
  Result<std::string> found = find_executable(options_.local, NodeRole::kLearner, self);
  ASSERT_TRUE(found.ok());
  EXPECT_EQ(*found, dir_ + "/bin/dice-learner");

  // Without bin_dir: next to dice-cluster, then the build tree's <role>/ folder.
  LocalOptions local;
  found = find_executable(local, NodeRole::kLearner, self);
  ASSERT_TRUE(found.ok());
  EXPECT_EQ(*found, dir_ + "/build/cluster/dice-learner");
  make_executable(dir_ + "/build/reward/dice-reward");
  found = find_executable(local, NodeRole::kReward, self);
  ASSERT_TRUE(found.ok());
  EXPECT_EQ(*found, dir_ + "/build/cluster/../reward/dice-reward");

  // A per-role name is searched the same way; a path is taken as is.
  make_executable(dir_ + "/bin/my_rollout");
  options_.local.executables["rollout"] = "my_rollout";
  found = find_executable(options_.local, NodeRole::kRollout, "");
  ASSERT_TRUE(found.ok());
  EXPECT_EQ(*found, dir_ + "/bin/my_rollout");
  options_.local.executables["rollout"] = dir_ + "/nowhere/my_rollout";
  found = find_executable(options_.local, NodeRole::kRollout, "");
  ASSERT_FALSE(found.ok());
  EXPECT_NE(found.status().message().find(dir_ + "/nowhere/my_rollout"), std::string::npos);
}

TEST_F(ServicePlanTest, MissingExecutableNamesItAndTheFoldersSearched) {
  options_.local.executables["reward"] = "no_such_service_xyz";
  Result<std::vector<ServiceSpec>> plan =
      plan_services(options_, PlanInputs{"/c.yaml", {}, "r", ""});
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.status().code(), StatusCode::kNotFound);
  const std::string& message = plan.status().message();
  EXPECT_NE(message.find("no_such_service_xyz"), std::string::npos) << message;
  EXPECT_NE(message.find("role reward"), std::string::npos) << message;
  EXPECT_NE(message.find(dir_ + "/bin"), std::string::npos) << message;
}

}  // namespace
}  // namespace dice::cluster
