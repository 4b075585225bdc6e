// The learner's view of its workers for `dice-cluster status`: parsed from /metrics text, and read
// over real HTTP from a MetricsServer exporting real dispatcher stats.
#include "cluster/learner_query.h"

#include <gtest/gtest.h>

#include "cluster/status_table.h"
#include "net/service/metrics_server.h"
#include "net/service/transport_metrics.h"

namespace dice::cluster {
namespace {

TEST(LearnerQueryTest, ParsesHeartbeatAgeAndWorkDonePerService) {
  const std::string text =
      "# HELP dice_learner_transport_worker_silent_seconds Since the last message.\n"
      "dice_learner_transport_worker_silent_seconds{worker=\"gpu1/reward/0\"} 0.25\n"
      "dice_learner_transport_worker_silent_seconds{worker=\"gpu2/rollout/3\"} 12\n"
      "dice_learner_transport_worker_completed_total{worker=\"gpu1/reward/0\"} 41\n"
      "dice_learner_transport_worker_completed_total{worker=\"not-a-worker-id\"} 7\n"
      "dice_learner_transport_pending 3\n";
  auto health = parse_worker_health(text);
  ASSERT_EQ(health.size(), 2u);
  EXPECT_DOUBLE_EQ(health["reward-0"].silent_seconds, 0.25);
  EXPECT_DOUBLE_EQ(health["reward-0"].completed, 41);
  EXPECT_DOUBLE_EQ(health["rollout-3"].silent_seconds, 12);
  EXPECT_DOUBLE_EQ(health["rollout-3"].completed, -1);  // not reported: unknown
}

TEST(LearnerQueryTest, ReadsTheLearnersMetricsOverHttpAndShowsThemInTheTable) {
  service::MetricsRegistry registry;
  transport::DispatcherStats stats;
  transport::WorkerSnapshot worker;
  worker.worker_id = "localhost/reward/0";
  worker.completed = 9;
  worker.silent_ms = 1500;
  stats.worker_list.push_back(worker);
  ASSERT_TRUE(service::export_dispatcher_stats(stats, "dice_learner_transport", &registry).ok());
  auto server = service::MetricsServer::start({}, &registry);
  ASSERT_TRUE(server.ok()) << server.status().to_string();

  auto health = query_worker_health("127.0.0.1", (*server)->port(), 2000);
  ASSERT_TRUE(health.ok()) << health.status().to_string();
  ASSERT_EQ(health->count("reward-0"), 1u);
  EXPECT_DOUBLE_EQ(health->at("reward-0").completed, 9);
  EXPECT_NEAR(health->at("reward-0").silent_seconds, 1.5, 1e-9);

  ClusterState state;
  state.run_id = "r1";
  ServiceState reward;
  reward.name = "reward-0";
  reward.role = "reward";
  reward.node = "localhost";
  state.services.push_back(reward);
  const std::string table = format_status(state, 100, *health);
  EXPECT_NE(table.find("HEARTBEAT"), std::string::npos) << table;
  EXPECT_NE(table.find("1s ago"), std::string::npos) << table;
  EXPECT_NE(table.find(" 9 "), std::string::npos) << table;

  (*server)->stop();
  auto gone = query_worker_health("127.0.0.1", (*server)->port(), 500);
  EXPECT_EQ(gone.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(gone.status().message().find("127.0.0.1:"), std::string::npos);
}

}  // namespace
}  // namespace dice::cluster
