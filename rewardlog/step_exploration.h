// How much a step's rollouts explored, as its StepRecord holds it (schemas/rewardlog.capnp,
// fields groupSize .. droppedDistinctTexts): the counts the learner adds up group by group, and
// the rates every reader (the learner's step line, dice-log, dice-dash) shows of them.
//
// A judged group is a complete group (every sample judged or lost) with at least one scored
// sample; dropped groups are judged groups too, skipped ones are not. Two response texts are the
// same when their bytes are equal.
#pragma once

#include <cstdint>

#include "schemas/rewardlog.capnp.h"

namespace dice::rewardlog {

struct ExplorationCounts {
  std::uint32_t group_size = 0;  // samples asked per task
  std::uint32_t groups_judged = 0;
  std::uint32_t groups_mixed = 0;            // of those, rewards not all equal
  std::uint32_t judged_samples = 0;          // their scored samples
  std::uint32_t distinct_texts = 0;          // their different texts, summed over the groups
  std::uint32_t dropped_groups_judged = 0;   // of the judged groups, those dropped
  std::uint32_t dropped_distinct_texts = 0;  // their different texts, summed

  // Adds one judged group of `samples` scored samples with `distinct_texts` different texts.
  void add_group(std::uint32_t samples, std::uint32_t distinct_texts, bool mixed, bool dropped);
};

// NaN where the denominator is 0 (no group judged, none dropped, or a log written before the
// counts existed): "not measured", never a made-up 0.
struct ExplorationRates {
  double mixed_share = 0.0;          // groups_mixed / groups_judged
  double distinct_texts_mean = 0.0;  // distinct_texts / groups_judged (at most group_size)
  // distinct_texts / judged_samples: 1 when no two answers of a group are equal, 1/n when every
  // group is one text n times
  double distinct_share = 0.0;
  double dropped_distinct_texts_mean = 0.0;  // dropped_distinct_texts / dropped_groups_judged
};

ExplorationRates exploration_rates(const ExplorationCounts& counts);

ExplorationCounts exploration_counts(schema::StepRecord::Reader step);
void set_exploration_counts(const ExplorationCounts& counts, schema::StepRecord::Builder step);

}  // namespace dice::rewardlog
