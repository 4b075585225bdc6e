// Transport stats snapshots copied into registry series.
#include "net/service/transport_metrics.h"

#include <gtest/gtest.h>

namespace dice::service {
namespace {

bool has_line(const std::string& text, const std::string& line) {
  return text.find("\n" + line + "\n") != std::string::npos;
}

TEST(TransportMetricsTest, CopiesDispatcherStatsAndReplacesWorkers) {
  transport::DispatcherStats stats;
  stats.pending = 4;
  stats.in_flight = 2;
  stats.completed = 11;
  stats.errors_received = 3;
  stats.cancelled = 5;
  stats.cancelled_in_flight = 6;
  stats.oldest_in_flight_ms = 1500;
  stats.worker_list = {{"reward-0", 1, 2, 9, 250}, {"reward-1", 0, 0, 2, 4000}};
  MetricsRegistry registry;
  ASSERT_TRUE(export_dispatcher_stats(stats, "dice_learner_transport", &registry).ok());
  std::string text = registry.render();
  EXPECT_TRUE(has_line(text, "dice_learner_transport_pending 4")) << text;
  EXPECT_TRUE(has_line(text, "dice_learner_transport_in_flight 2"));
  EXPECT_TRUE(has_line(text, "# TYPE dice_learner_transport_completed_total counter"));
  EXPECT_TRUE(has_line(text, "dice_learner_transport_completed_total 11"));
  EXPECT_TRUE(has_line(text, "dice_learner_transport_errors_received_total 3"));
  EXPECT_TRUE(has_line(text, "dice_learner_transport_cancelled_total 5"));
  EXPECT_TRUE(has_line(text, "dice_learner_transport_cancelled_in_flight_total 6"));
  EXPECT_TRUE(has_line(text, "dice_learner_transport_oldest_in_flight_seconds 1.5"));
  EXPECT_TRUE(has_line(text, "dice_learner_transport_worker_in_flight{worker=\"reward-0\"} 2"));
  EXPECT_TRUE(
      has_line(text, "dice_learner_transport_worker_silent_seconds{worker=\"reward-1\"} 4"));
  EXPECT_TRUE(
      has_line(text, "dice_learner_transport_worker_completed_total{worker=\"reward-0\"} 9"));

  // A worker that left is no longer reported; new numbers replace old ones.
  stats.worker_list = {{"reward-1", 1, 1, 3, 100}};
  stats.pending = 0;
  ASSERT_TRUE(export_dispatcher_stats(stats, "dice_learner_transport", &registry).ok());
  text = registry.render();
  EXPECT_EQ(text.find("reward-0"), std::string::npos);
  EXPECT_TRUE(has_line(text, "dice_learner_transport_pending 0"));
  EXPECT_TRUE(
      has_line(text, "dice_learner_transport_worker_silent_seconds{worker=\"reward-1\"} 0.1"));
}

TEST(TransportMetricsTest, CopiesWorkerStatsWithWorkerLabel) {
  transport::WorkerStats stats;
  stats.inbox = 3;
  stats.held = 1;
  stats.finished = 17;
  MetricsRegistry registry;
  ASSERT_TRUE(export_worker_stats(stats, "rollout-\"0\"", "dice_worker", &registry).ok());
  std::string text = registry.render();
  EXPECT_TRUE(has_line(text, "dice_worker_inbox{worker=\"rollout-\\\"0\\\"\"} 3")) << text;
  EXPECT_TRUE(has_line(text, "dice_worker_finished_total{worker=\"rollout-\\\"0\\\"\"} 17"));
}

TEST(TransportMetricsTest, BadPrefixIsAnError) {
  MetricsRegistry registry;
  Status status = export_dispatcher_stats({}, "bad prefix", &registry);
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace dice::service
