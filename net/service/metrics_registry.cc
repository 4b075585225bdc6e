#include "net/service/metrics_registry.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace dice::service {
namespace {

bool valid_metric_name(const std::string& name) {
  if (name.empty()) return false;
  for (std::size_t i = 0; i < name.size(); ++i) {
    char c = name[i];
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':' ||
              (i > 0 && c >= '0' && c <= '9');
    if (!ok) return false;
  }
  return true;
}

bool valid_label_name(const std::string& name) {
  if (name.empty() || name.rfind("__", 0) == 0) return false;
  for (std::size_t i = 0; i < name.size(); ++i) {
    char c = name[i];
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
              (i > 0 && c >= '0' && c <= '9');
    if (!ok) return false;
  }
  return true;
}

std::string escape_help(const std::string& help) {
  std::string out;
  for (char c : help) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

const char* type_name(MetricType type) {
  return type == MetricType::kCounter ? "counter" : "gauge";
}

// `{a="1",b="x"}` with names sorted, or "" for no labels: the series' identity and its text.
Result<std::string> label_text(const std::string& metric, MetricLabels labels) {
  std::sort(labels.begin(), labels.end());
  std::string out;
  for (std::size_t i = 0; i < labels.size(); ++i) {
    const auto& [name, value] = labels[i];
    if (!valid_label_name(name)) {
      return Status::invalid_argument("metric " + metric + ": bad label name '" + name + "'");
    }
    if (i > 0 && labels[i - 1].first == name) {
      return Status::invalid_argument("metric " + metric + ": label '" + name + "' repeated");
    }
    out += i == 0 ? "{" : ",";
    out += name + "=\"" + escape_label_value(value) + "\"";
  }
  if (!out.empty()) out += "}";
  return out;
}

void atomic_add(std::atomic<double>& target, double delta) {
  double current = target.load(std::memory_order_relaxed);
  while (!target.compare_exchange_weak(current, current + delta, std::memory_order_relaxed)) {
  }
}

}  // namespace

std::string escape_label_value(const std::string& value) {
  std::string out;
  for (char c : value) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '"') {
      out += "\\\"";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

std::string format_metric_value(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "+Inf" : "-Inf";
  char buf[64];
  if (value == std::floor(value) && std::fabs(value) < 1e15) {
    std::snprintf(buf, sizeof buf, "%.0f", value == 0.0 ? 0.0 : value);  // no "-0"
    return buf;
  }
  for (int precision = 15; precision <= 17; ++precision) {
    std::snprintf(buf, sizeof buf, "%.*g", precision, value);
    if (std::strtod(buf, nullptr) == value) break;
  }
  return buf;
}

void Counter::add(double delta) {
  if (delta > 0) atomic_add(value_, delta);
}

void Gauge::add(double delta) {
  atomic_add(value_, delta);
}

Result<MetricsRegistry::Family*> MetricsRegistry::family(const std::string& name, MetricType type,
                                                         const std::string& help, bool snapshot) {
  if (!valid_metric_name(name)) {
    return Status::invalid_argument("bad metric name '" + name + "'");
  }
  auto [it, inserted] = families_.try_emplace(name);
  Family& f = it->second;
  if (inserted) {
    f.type = type;
    f.help = help;
    f.snapshot = snapshot;
    return &f;
  }
  if (f.type != type) {
    return Status::invalid_argument("metric " + name + ": already a " + type_name(f.type) +
                                    ", not a " + type_name(type));
  }
  if (f.help != help) {
    return Status::invalid_argument("metric " + name + ": defined before with other help text");
  }
  if (f.snapshot != snapshot) {
    return Status::invalid_argument(
        "metric " + name +
        (f.snapshot ? ": is a snapshot family (set_snapshot)" : ": is not a snapshot family"));
  }
  return &f;
}

Result<MetricsRegistry::Value*> MetricsRegistry::series(const std::string& name, MetricType type,
                                                        const std::string& help,
                                                        const MetricLabels& labels) {
  DICE_ASSIGN_OR_RETURN(std::string key, label_text(name, labels));
  std::lock_guard<std::mutex> lock(mutex_);
  DICE_ASSIGN_OR_RETURN(Family * f, family(name, type, help, /*snapshot=*/false));
  auto& slot = f->series[key];
  if (!slot) slot = std::make_unique<Value>();
  return slot.get();
}

Result<Counter*> MetricsRegistry::counter(const std::string& name, const std::string& help,
                                          const MetricLabels& labels) {
  DICE_ASSIGN_OR_RETURN(Value * value, series(name, MetricType::kCounter, help, labels));
  return &value->counter;
}

Result<Gauge*> MetricsRegistry::gauge(const std::string& name, const std::string& help,
                                      const MetricLabels& labels) {
  DICE_ASSIGN_OR_RETURN(Value * value, series(name, MetricType::kGauge, help, labels));
  return &value->gauge;
}

Status MetricsRegistry::set_snapshot(const std::string& name, MetricType type,
                                     const std::string& help,
                                     const std::vector<MetricSample>& samples) {
  // Build the new series outside the lock; check everything before replacing anything.
  std::map<std::string, std::unique_ptr<Value>> series;
  for (const MetricSample& sample : samples) {
    DICE_ASSIGN_OR_RETURN(std::string key, label_text(name, sample.labels));
    auto& slot = series[key];
    if (slot) return Status::invalid_argument("metric " + name + ": series " + key + " repeated");
    slot = std::make_unique<Value>();
    slot->counter.add(sample.value);
    slot->gauge.set(sample.value);
  }
  std::lock_guard<std::mutex> lock(mutex_);
  DICE_ASSIGN_OR_RETURN(Family * f, family(name, type, help, /*snapshot=*/true));
  f->series = std::move(series);
  return Status::ok_status();
}

std::string MetricsRegistry::render() const {
  std::string out;
  std::lock_guard<std::mutex> lock(mutex_);
  for (const auto& [name, f] : families_) {
    out += "# HELP " + name + " " + escape_help(f.help) + "\n";
    out += "# TYPE " + name + " " + type_name(f.type) + "\n";
    for (const auto& [labels, value] : f.series) {
      double v = f.type == MetricType::kCounter ? value->counter.value() : value->gauge.value();
      out += name + labels + " " + format_metric_value(v) + "\n";
    }
  }
  return out;
}

}  // namespace dice::service
