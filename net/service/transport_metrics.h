// Copies transport stats() snapshots into a MetricsRegistry, as snapshot families (replaced whole
// on each call, so workers that left stop being reported). Call it from
// MetricsServerOptions::before_scrape so each scrape sees fresh numbers:
//
//   options.before_scrape = [&] {
//     export_dispatcher_stats(dispatcher->stats(), "dice_learner_transport", &registry).ignore();
//   };
//
// Names are `<prefix>_<field>`: depths and ages are gauges, ever-growing counts are counters
// (suffix _total). Per-worker series carry a worker="id" label; heartbeat age is
// <prefix>_worker_silent_seconds.
#pragma once

#include <string>

#include "common/status.h"
#include "net/service/metrics_registry.h"
#include "net/transport/dispatcher_state.h"
#include "net/transport/worker_connection.h"

namespace dice::service {

// The learner side: queue depths, in flight, completed, failures, and per-worker credits, in
// flight, completed and heartbeat age. InvalidArgument for a prefix that is not a metric name.
Status export_dispatcher_stats(const transport::DispatcherStats& stats, const std::string& prefix,
                               MetricsRegistry* registry);

// The worker side: inbox/outbox/held depths and counters, each with a worker="id" label.
Status export_worker_stats(const transport::WorkerStats& stats, const std::string& worker_id,
                           const std::string& prefix, MetricsRegistry* registry);

}  // namespace dice::service
