// The learner's own /metrics series (the dispatcher's are exported beside them on each scrape,
// prefix dice_learner_transport; see net/service/transport_metrics.h).
#pragma once

#include "common/status.h"
#include "net/service/metrics_registry.h"

namespace dice {

struct LearnerMetrics {
  service::Counter* steps = nullptr;           // dice_learner_steps_total
  service::Counter* candidates = nullptr;      // dice_learner_candidates_total
  service::Counter* verdicts = nullptr;        // dice_learner_verdicts_total
  service::Counter* correct = nullptr;         // dice_learner_verdicts_correct_total
  service::Counter* stale = nullptr;           // dice_learner_candidates_stale_total
  service::Counter* rollout_errors = nullptr;  // dice_learner_worker_errors_total{role=rollout}
  service::Counter* reward_errors = nullptr;   // dice_learner_worker_errors_total{role=reward}
  service::Counter* groups_used =
      nullptr;  // dice_learner_groups_total{outcome=used}: complete, kept
  service::Counter* groups_dropped = nullptr;  // dice_learner_groups_total{outcome=dropped}
  service::Counter* groups_skipped = nullptr;  // dice_learner_groups_total{outcome=skipped}
  service::Gauge* step = nullptr;              // dice_learner_step: global step in progress
  service::Gauge* open_groups = nullptr;       // dice_learner_open_groups
  service::Gauge* backlog = nullptr;           // dice_learner_submit_backlog: not yet queued
  service::Gauge* policy_version = nullptr;    // dice_learner_policy_version

  // Registers every series in `registry` (which must outlive the result).
  static Result<LearnerMetrics> create(service::MetricsRegistry& registry);
};

}  // namespace dice
