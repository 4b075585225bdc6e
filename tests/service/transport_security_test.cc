// cluster.transport.bind_address and cluster.transport.curve as one service sees them: where its
// sockets bind, and which CURVE keys it loads (from a keys folder made as dice-cluster makes it).
#include "net/service/transport_security.h"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

#include "net/service/worker_loop.h"
#include "net/transport/curve_keys.h"
#include "tests/support/temp_dir.h"

namespace dice::service {
namespace {

const std::string kLocalConfig = std::string(DICE_SOURCE_DIR) + "/configs/local.yaml";

ServiceContext context_with(const std::vector<std::string>& overrides, int worker_index = 0,
                            const std::string& keys = "") {
  ServiceFlags flags;
  flags.config_path = kLocalConfig;
  flags.overrides = overrides;
  flags.worker_index = worker_index;
  flags.transport_keys = keys;
  auto context = prepare_service("reward", flags);
  // Thrown, not dereferenced: gtest reports the test failed with the reason instead of crashing.
  if (!context.ok()) throw std::runtime_error(context.status().to_string());
  log_configure(LogOptions{});
  return std::move(context).value();
}

TEST(BindAddressTest, NamesResolveAndAddressesStay) {
  EXPECT_EQ(resolve_bind_address("127.0.0.1", "x").value(), "127.0.0.1");
  EXPECT_EQ(resolve_bind_address("localhost", "x").value(), "127.0.0.1");
  EXPECT_EQ(resolve_bind_address("*", "x").value(), "0.0.0.0");
  EXPECT_EQ(resolve_bind_address("::1", "x").value(), "::1");
  auto unknown = resolve_bind_address("no-such-host.invalid", "cluster.learner.host");
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.status().message().find("cluster.learner.host 'no-such-host.invalid'"),
            std::string::npos)
      << unknown.status().to_string();
  EXPECT_EQ(tcp_endpoint("10.0.0.2", 5555), "tcp://10.0.0.2:5555");
  EXPECT_EQ(tcp_endpoint("::1", 0), "tcp://[::1]:*");
}

TEST(BindAddressTest, LoopbackOnOneMachineTheNodesAddressesOnSeveral) {
  // The local default: the learner where its workers connect (127.0.0.1), workers' /metrics on
  // loopback; never every interface unless asked.
  ServiceContext local = context_with({});
  EXPECT_EQ(learner_bind_address(local.config.cluster).value(), "127.0.0.1");
  EXPECT_EQ(worker_bind_address(local.config.cluster, schema::Role::REWARD, 0).value(),
            "127.0.0.1");
  auto options = worker_loop_options(local, schema::Role::REWARD, 1);
  ASSERT_TRUE(options.ok()) << options.status().to_string();
  EXPECT_EQ(options->metrics.host, "127.0.0.1");
  EXPECT_FALSE(options->transport.curve.on()) << "the local backend's auto: CURVE off";

  ServiceContext everywhere = context_with({"cluster.transport.bind_address=0.0.0.0"});
  EXPECT_EQ(learner_bind_address(everywhere.config.cluster).value(), "0.0.0.0");

  // Several machines: a worker's /metrics on its node's address, found by its worker index.
  ServiceContext ssh = context_with({"cluster.backend=ssh", "cluster.transport.curve=off"});
  EXPECT_EQ(worker_bind_address(ssh.config.cluster, schema::Role::REWARD, 0).value(),
            "127.0.0.1");  // the default node is localhost
  auto beyond = worker_bind_address(ssh.config.cluster, schema::Role::REWARD, 5);
  ASSERT_FALSE(beyond.ok());
  EXPECT_NE(beyond.status().message().find("--worker-index 5"), std::string::npos);
}

TEST(BindAddressTest, ALoopbackBindWithWorkersOnOtherMachinesIsAConfigError) {
  ServiceFlags flags;
  flags.config_path = kLocalConfig;
  flags.overrides = {"cluster.backend=ssh", "cluster.transport.bind_address=127.0.0.1"};
  auto context = prepare_service("learner", flags);
  ASSERT_FALSE(context.ok());
  EXPECT_NE(context.status().message().find("cluster.transport.bind_address"), std::string::npos)
      << context.status().to_string();
  log_configure(LogOptions{});
}

TEST(CurveOptionsTest, KeysComeFromTheFolderDiceClusterMakes) {
  testing_util::TempDir temp;
  const std::string keys = temp.path() + "/keys";
  ASSERT_TRUE(transport::ensure_curve_keys(keys, {"learner", "reward-0", "reward-1"}).ok());
  ServiceContext worker = context_with({"cluster.transport.curve=on"}, 1, keys);
  auto curve = worker_curve(worker, schema::Role::REWARD);
  ASSERT_TRUE(curve.ok()) << curve.status().to_string();
  EXPECT_EQ(curve->secret_key, transport::read_curve_key_pair(keys, "reward-1")->secret_key);
  EXPECT_EQ(curve->server_key, transport::read_curve_public_key(keys, "learner").value());

  ServiceContext learner = context_with({"cluster.transport.curve=on"}, 0, keys);
  auto server = learner_curve(learner);
  ASSERT_TRUE(server.ok()) << server.status().to_string();
  EXPECT_EQ(server->client_keys.size(), 2u);
  EXPECT_TRUE(server->on());
}

TEST(CurveOptionsTest, CurveOnWithoutKeysAndKeysWithCurveOffAreRefused) {
  // ssh's auto is on: a service started by hand, without dice-cluster's keys, does not start.
  ServiceContext no_keys = context_with({"cluster.backend=ssh"});
  auto refused = learner_curve(no_keys);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("--transport-keys"), std::string::npos);
  auto options = worker_loop_options(no_keys, schema::Role::ROLLOUT, 1);
  EXPECT_FALSE(options.ok());

  ServiceContext stray = context_with({}, 0, "/nonexistent/keys");
  auto off = learner_curve(stray);
  ASSERT_FALSE(off.ok());
  EXPECT_NE(off.status().message().find("curve is off"), std::string::npos);
}

}  // namespace
}  // namespace dice::service
