// The run's CURVE keys as dice-cluster up makes them (cluster/run_keys.h): one key pair per
// service of the plan, private files, the flag on every command line, none with CURVE off.
#include "cluster/run_keys.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <filesystem>

#include "net/transport/curve_keys.h"
#include "tests/support/temp_dir.h"

namespace dice::cluster {
namespace {

std::vector<ServiceSpec> two_node_plan(ClusterOptions* options) {
  options->nodes = {
      NodeOptions{
          "a", {NodeRole::kLearner, NodeRole::kRollout}, {{"learner", {0}}, {"rollout", {1}}}},
      NodeOptions{"b", {NodeRole::kReward}, {{"reward", {0, 1}}}}};
  PlanInputs inputs{"/abs/run.yaml", {}, "r1", "", /*resolve_locally=*/false};
  auto plan = plan_services(*options, inputs);
  EXPECT_TRUE(plan.ok()) << plan.status().to_string();
  return std::move(plan).value();
}

TEST(RunKeysTest, EveryServiceGetsItsKeyAndTheFlag) {
  testing_util::TempDir state;
  ClusterOptions options;
  options.backend = ClusterBackend::kSsh;  // curve auto: on
  std::vector<ServiceSpec> services = two_node_plan(&options);
  auto dir = add_transport_keys(options, state.path(), "r1", &services);
  ASSERT_TRUE(dir.ok()) << dir.status().to_string();
  EXPECT_EQ(*dir, state.path() + "/keys/r1");
  for (const ServiceSpec& spec : services) {
    ASSERT_GE(spec.args.size(), 2u);
    EXPECT_EQ(spec.args[spec.args.size() - 2], "--transport-keys") << spec.name;
    EXPECT_EQ(spec.args.back(), *dir);
  }
  for (const char* name : {"learner", "rollout-0", "reward-0", "reward-1"}) {
    auto pair = transport::read_curve_key_pair(*dir, name);
    EXPECT_TRUE(pair.ok()) << name << ": " << pair.status().to_string();
  }
  auto clients = transport::read_curve_public_keys(*dir, "learner");
  ASSERT_TRUE(clients.ok());
  EXPECT_EQ(clients->size(), 3u);
  // The same run again (dice-cluster restarting it) keeps every identity.
  const std::string before = transport::read_curve_key_pair(*dir, "reward-1")->secret_key;
  std::vector<ServiceSpec> again = two_node_plan(&options);
  ASSERT_TRUE(add_transport_keys(options, state.path(), "r1", &again).ok());
  EXPECT_EQ(transport::read_curve_key_pair(*dir, "reward-1")->secret_key, before);
}

TEST(RunKeysTest, NothingWithCurveOff) {
  testing_util::TempDir state;
  ClusterOptions options;  // local backend: auto is off
  std::vector<ServiceSpec> services = two_node_plan(&options);
  const std::vector<ServiceSpec> before = services;
  auto dir = add_transport_keys(options, state.path(), "r1", &services);
  ASSERT_TRUE(dir.ok());
  EXPECT_TRUE(dir->empty());
  for (std::size_t i = 0; i < services.size(); ++i) EXPECT_EQ(services[i].args, before[i].args);
  EXPECT_FALSE(std::filesystem::exists(state.path() + "/keys"));
}

}  // namespace
}  // namespace dice::cluster
