// MetricsRegistry: a process's counters and gauges, rendered in the Prometheus text exposition
// format (version 0.0.4) for GET /metrics.
//
//   MetricsRegistry registry;
//   DICE_ASSIGN_OR_RETURN(Counter* failures, registry.counter("dice_reward_failures_total",
//       "Candidates that failed, by class.", {{"class", "compileError"}}));
//   failures->add();
//
//   # HELP dice_reward_failures_total Candidates that failed, by class.
//   # TYPE dice_reward_failures_total counter
//   dice_reward_failures_total{class="compileError"} 1
//
// Families render sorted by name, series by their label text; label names within a series are
// sorted. Series live as long as the registry, so hot paths keep the Counter*/Gauge* and update
// it without a lock. Snapshot families (set_snapshot) are instead replaced whole each time: for
// values copied from elsewhere, such as transport stats, where series come and go (workers).
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "common/status.h"

namespace dice::service {

enum class MetricType { kCounter, kGauge };

// (name, value) pairs; the order given does not matter.
using MetricLabels = std::vector<std::pair<std::string, std::string>>;

// A value that only goes up (events, totals).
class Counter {
 public:
  // Negative deltas are ignored: a counter never goes down.
  void add(double delta = 1.0);
  double value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0.0};
};

// A value that goes up and down (queue depths, ages).
class Gauge {
 public:
  void set(double value) { value_.store(value, std::memory_order_relaxed); }
  void add(double delta);
  double value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0.0};
};

// One series of a snapshot family.
struct MetricSample {
  MetricLabels labels;
  double value = 0.0;
};

class MetricsRegistry {
 public:
  // The series `name`{labels}, created at 0 on first use; later calls with the same name and
  // labels return the same object. InvalidArgument when the metric name is not
  // [a-zA-Z_:][a-zA-Z0-9_:]*, a label name is not [a-zA-Z_][a-zA-Z0-9_]* (or starts with "__", or
  // repeats), or `name` already exists with another type, other help or as a snapshot family.
  Result<Counter*> counter(const std::string& name, const std::string& help,
                           const MetricLabels& labels = {});
  Result<Gauge*> gauge(const std::string& name, const std::string& help,
                       const MetricLabels& labels = {});

  // Replaces every series of the snapshot family `name` with `samples`. Same checks as above;
  // `name` must not be a counter()/gauge() family.
  Status set_snapshot(const std::string& name, MetricType type, const std::string& help,
                      const std::vector<MetricSample>& samples);

  // The text exposition of every family.
  std::string render() const;

 private:
  struct Value {
    Counter counter;
    Gauge gauge;
  };
  struct Family {
    MetricType type;
    std::string help;
    bool snapshot = false;
    std::map<std::string, std::unique_ptr<Value>> series;  // by rendered label text
  };
  Result<Value*> series(const std::string& name, MetricType type, const std::string& help,
                        const MetricLabels& labels);
  Result<Family*> family(const std::string& name, MetricType type, const std::string& help,
                         bool snapshot);  // caller holds mutex_

  mutable std::mutex mutex_;
  std::map<std::string, Family> families_;  // guarded by mutex_
};

// Exposed for tests and other exporters.
// A label value with \, " and newline escaped as the format requires.
std::string escape_label_value(const std::string& value);
// A sample value: integers without a fraction, NaN, +Inf, -Inf, else the shortest exact form.
std::string format_metric_value(double value);

}  // namespace dice::service
