#include "rewardlog/step_exploration.h"

#include <limits>

namespace dice::rewardlog {
namespace {

double ratio(std::uint32_t part, std::uint32_t whole) {
  return whole == 0 ? std::numeric_limits<double>::quiet_NaN() : static_cast<double>(part) / whole;
}

}  // namespace

void ExplorationCounts::add_group(std::uint32_t samples, std::uint32_t distinct, bool mixed,
                                  bool dropped) {
  ++groups_judged;
  groups_mixed += mixed ? 1 : 0;
  judged_samples += samples;
  distinct_texts += distinct;
  if (dropped) {
    ++dropped_groups_judged;
    dropped_distinct_texts += distinct;
  }
}

ExplorationRates exploration_rates(const ExplorationCounts& c) {
  ExplorationRates rates;
  rates.mixed_share = ratio(c.groups_mixed, c.groups_judged);
  rates.distinct_texts_mean = ratio(c.distinct_texts, c.groups_judged);
  rates.distinct_share = ratio(c.distinct_texts, c.judged_samples);
  rates.dropped_distinct_texts_mean = ratio(c.dropped_distinct_texts, c.dropped_groups_judged);
  return rates;
}

ExplorationCounts exploration_counts(schema::StepRecord::Reader step) {
  ExplorationCounts c;
  c.group_size = step.getGroupSize();
  c.groups_judged = step.getGroupsJudged();
  c.groups_mixed = step.getGroupsMixed();
  c.judged_samples = step.getJudgedSamples();
  c.distinct_texts = step.getDistinctTexts();
  c.dropped_groups_judged = step.getDroppedGroupsJudged();
  c.dropped_distinct_texts = step.getDroppedDistinctTexts();
  return c;
}

void set_exploration_counts(const ExplorationCounts& c, schema::StepRecord::Builder step) {
  step.setGroupSize(c.group_size);
  step.setGroupsJudged(c.groups_judged);
  step.setGroupsMixed(c.groups_mixed);
  step.setJudgedSamples(c.judged_samples);
  step.setDistinctTexts(c.distinct_texts);
  step.setDroppedGroupsJudged(c.dropped_groups_judged);
  step.setDroppedDistinctTexts(c.dropped_distinct_texts);
}

}  // namespace dice::rewardlog
