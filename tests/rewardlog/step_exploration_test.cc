// The exploration readouts of a StepRecord: counts added group by group, written to and read back
// from the record, and the rates shown of them ("not measured" where nothing was judged).
#include "rewardlog/step_exploration.h"

#include <capnp/message.h>
#include <gtest/gtest.h>

#include <cmath>

namespace dice::rewardlog {
namespace {

TEST(StepExplorationTest, RatesOfTheJudgedAndOfTheDroppedGroups) {
  ExplorationCounts c;
  c.group_size = 8;
  c.add_group(8, 1, /*mixed=*/false, /*dropped=*/true);  // one text eight times
  c.add_group(8, 3, /*mixed=*/true, /*dropped=*/false);
  c.add_group(6, 6, /*mixed=*/true, /*dropped=*/false);  // two samples lost
  c.add_group(8, 2, /*mixed=*/false, /*dropped=*/true);
  EXPECT_EQ(c.groups_judged, 4u);
  EXPECT_EQ(c.groups_mixed, 2u);
  EXPECT_EQ(c.judged_samples, 30u);
  EXPECT_EQ(c.distinct_texts, 12u);
  EXPECT_EQ(c.dropped_groups_judged, 2u);
  EXPECT_EQ(c.dropped_distinct_texts, 3u);

  const ExplorationRates r = exploration_rates(c);
  EXPECT_DOUBLE_EQ(r.mixed_share, 0.5);
  EXPECT_DOUBLE_EQ(r.distinct_texts_mean, 3.0);
  EXPECT_DOUBLE_EQ(r.distinct_share, 12.0 / 30.0);
  EXPECT_DOUBLE_EQ(r.dropped_distinct_texts_mean, 1.5);
}

TEST(StepExplorationTest, NothingJudgedIsNotMeasuredRatherThanZero) {
  ExplorationCounts c;
  c.group_size = 8;
  ExplorationRates r = exploration_rates(c);
  EXPECT_TRUE(std::isnan(r.mixed_share));
  EXPECT_TRUE(std::isnan(r.distinct_texts_mean));
  EXPECT_TRUE(std::isnan(r.distinct_share));
  EXPECT_TRUE(std::isnan(r.dropped_distinct_texts_mean));
  c.add_group(8, 4, /*mixed=*/true, /*dropped=*/false);  // no dropped group
  r = exploration_rates(c);
  EXPECT_DOUBLE_EQ(r.mixed_share, 1.0);
  EXPECT_TRUE(std::isnan(r.dropped_distinct_texts_mean));
}

TEST(StepExplorationTest, CountsRoundTripThroughTheStepRecord) {
  ExplorationCounts c;
  c.group_size = 16;
  c.add_group(16, 5, true, false);
  c.add_group(15, 1, false, true);
  capnp::MallocMessageBuilder message;
  auto step = message.initRoot<schema::StepRecord>();
  set_exploration_counts(c, step);
  const ExplorationCounts back = exploration_counts(step.asReader());
  EXPECT_EQ(back.group_size, 16u);
  EXPECT_EQ(back.groups_judged, 2u);
  EXPECT_EQ(back.groups_mixed, 1u);
  EXPECT_EQ(back.judged_samples, 31u);
  EXPECT_EQ(back.distinct_texts, 6u);
  EXPECT_EQ(back.dropped_groups_judged, 1u);
  EXPECT_EQ(back.dropped_distinct_texts, 1u);
}

// A StepRecord written before the fields existed reads zero counts: no rate, and the clip
// fraction reads NaN ("not computed"), not a clip fraction of 0.
TEST(StepExplorationTest, AnOlderRecordReadsAsNotMeasured) {
  capnp::MallocMessageBuilder message;
  auto step = message.initRoot<schema::StepRecord>();
  step.setRunId("old");
  const ExplorationRates r = exploration_rates(exploration_counts(step.asReader()));
  EXPECT_TRUE(std::isnan(r.mixed_share));
  EXPECT_TRUE(std::isnan(step.asReader().getClipFraction()));
}

}  // namespace
}  // namespace dice::rewardlog
