// MetricsRegistry: the exact exposition text, escaping, checks and concurrent updates.
#include "net/service/metrics_registry.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <thread>

namespace dice::service {
namespace {

TEST(MetricsRegistryTest, RendersExactExpositionText) {
  MetricsRegistry registry;
  auto failures_compile =
      registry.counter("dice_failures_total", "Failures by class.", {{"class", "compileError"}});
  auto failures_timeout =
      registry.counter("dice_failures_total", "Failures by class.", {{"class", "timeout"}});
  auto depth = registry.gauge("dice_queue_depth", "Items waiting.");
  ASSERT_TRUE(failures_compile.ok() && failures_timeout.ok() && depth.ok());
  (*failures_compile)->add();
  (*failures_compile)->add(2);
  (*failures_timeout)->add(0.5);
  (*depth)->set(7);
  (*depth)->add(-2);
  EXPECT_EQ(registry.render(),
            "# HELP dice_failures_total Failures by class.\n"
            "# TYPE dice_failures_total counter\n"
            "dice_failures_total{class=\"compileError\"} 3\n"
            "dice_failures_total{class=\"timeout\"} 0.5\n"
            "# HELP dice_queue_depth Items waiting.\n"
            "# TYPE dice_queue_depth gauge\n"
            "dice_queue_depth 5\n");
}

TEST(MetricsRegistryTest, SameSeriesIsSameObjectWhateverTheLabelOrder) {
  MetricsRegistry registry;
  auto a = registry.gauge("g", "h", {{"b", "2"}, {"a", "1"}});
  auto b = registry.gauge("g", "h", {{"a", "1"}, {"b", "2"}});
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(*a, *b);
  (*a)->set(4);
  EXPECT_EQ(registry.render(), "# HELP g h\n# TYPE g gauge\ng{a=\"1\",b=\"2\"} 4\n");
}

TEST(MetricsRegistryTest, EscapesLabelValuesAndHelp) {
  EXPECT_EQ(escape_label_value("a\\b\"c\nd"), "a\\\\b\\\"c\\nd");
  MetricsRegistry registry;
  auto c =
      registry.counter("c_total", "line one\nback\\slash \"quoted\"", {{"path", "C:\\tmp\n\"x\""}});
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(registry.render(),
            "# HELP c_total line one\\nback\\\\slash \"quoted\"\n"
            "# TYPE c_total counter\n"
            "c_total{path=\"C:\\\\tmp\\n\\\"x\\\"\"} 0\n");
}

TEST(MetricsRegistryTest, FormatsValues) {
  EXPECT_EQ(format_metric_value(0), "0");
  EXPECT_EQ(format_metric_value(-0.0), "0");
  EXPECT_EQ(format_metric_value(42), "42");
  EXPECT_EQ(format_metric_value(-3), "-3");
  EXPECT_EQ(format_metric_value(0.1), "0.1");
  EXPECT_EQ(format_metric_value(1.5e300), "1.5e+300");
  EXPECT_EQ(format_metric_value(std::numeric_limits<double>::quiet_NaN()), "NaN");
  EXPECT_EQ(format_metric_value(HUGE_VAL), "+Inf");
  EXPECT_EQ(format_metric_value(-HUGE_VAL), "-Inf");
  double third = 1.0 / 3.0;
  EXPECT_EQ(std::stod(format_metric_value(third)), third);
}

TEST(MetricsRegistryTest, RejectsBadNamesAndConflicts) {
  MetricsRegistry registry;
  EXPECT_FALSE(registry.counter("", "h").ok());
  EXPECT_FALSE(registry.counter("9lives", "h").ok());
  EXPECT_FALSE(registry.counter("has-dash", "h").ok());
  EXPECT_FALSE(registry.counter("ok", "h", {{"__reserved", "x"}}).ok());
  EXPECT_FALSE(registry.counter("ok", "h", {{"bad:label", "x"}}).ok());
  auto repeated = registry.counter("ok", "h", {{"a", "1"}, {"a", "2"}});
  ASSERT_FALSE(repeated.ok());
  EXPECT_NE(repeated.status().message().find("label 'a' repeated"), std::string::npos);

  ASSERT_TRUE(registry.counter("m", "h").ok());
  auto as_gauge = registry.gauge("m", "h");
  ASSERT_FALSE(as_gauge.ok());
  EXPECT_NE(as_gauge.status().message().find("already a counter"), std::string::npos);
  EXPECT_FALSE(registry.counter("m", "other help").ok());
  EXPECT_FALSE(registry.set_snapshot("m", MetricType::kCounter, "h", {}).ok());
  ASSERT_TRUE(registry.set_snapshot("s", MetricType::kGauge, "h", {}).ok());
  EXPECT_FALSE(registry.gauge("s", "h").ok());
  // A failed call leaves nothing behind.
  EXPECT_EQ(registry.render().find("9lives"), std::string::npos);
}

TEST(MetricsRegistryTest, CounterNeverGoesDown) {
  MetricsRegistry registry;
  Counter* c = registry.counter("c_total", "h").value();
  c->add(5);
  c->add(-3);
  EXPECT_EQ(c->value(), 5);
}

TEST(MetricsRegistryTest, SnapshotReplacesSeries) {
  MetricsRegistry registry;
  ASSERT_TRUE(registry
                  .set_snapshot("w", MetricType::kGauge, "per worker",
                                {{{{"worker", "a"}}, 1}, {{{"worker", "b"}}, 2}})
                  .ok());
  ASSERT_TRUE(
      registry.set_snapshot("w", MetricType::kGauge, "per worker", {{{{"worker", "b"}}, 3}}).ok());
  EXPECT_EQ(registry.render(), "# HELP w per worker\n# TYPE w gauge\nw{worker=\"b\"} 3\n");
  Status duplicate = registry.set_snapshot("w", MetricType::kGauge, "per worker",
                                           {{{{"worker", "c"}}, 1}, {{{"worker", "c"}}, 2}});
  EXPECT_FALSE(duplicate.ok());
  EXPECT_EQ(registry.render(), "# HELP w per worker\n# TYPE w gauge\nw{worker=\"b\"} 3\n");
}

TEST(MetricsRegistryTest, ConcurrentUpdatesAndRendersLoseNothing) {
  MetricsRegistry registry;
  constexpr int kThreads = 8;
  constexpr int kAdds = 20000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&registry, t] {
      Counter* shared = registry.counter("shared_total", "h").value();
      Counter* own = registry.counter("own_total", "h", {{"t", std::to_string(t)}}).value();
      for (int i = 0; i < kAdds; ++i) {
        shared->add();
        own->add();
        if (i % 5000 == 0) {
          EXPECT_FALSE(registry.render().empty());
        }
      }
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(registry.counter("shared_total", "h").value()->value(), kThreads * kAdds);
  std::string text = registry.render();
  for (int t = 0; t < kThreads; ++t) {
    EXPECT_NE(text.find("own_total{t=\"" + std::to_string(t) + "\"} 20000\n"), std::string::npos);
  }
}

}  // namespace
}  // namespace dice::service
