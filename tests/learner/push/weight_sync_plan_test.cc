// The learner's weight-sync decisions: ranks for the registered rollout workers, when NCCL is
// used and why not, and the start-up check of rollout.weight_sync nccl.
#include "learner/push/weight_sync_plan.h"

#include <gtest/gtest.h>

namespace dice {
namespace {

TEST(WeightSyncPlanTest, RanksAreSortedRolloutWorkersOnly) {
  const std::vector<std::string> ids = {"b/rollout/1", "a/reward/0", "a/rollout/0", "b/rollout/0",
                                        "a/rollout/0"};
  EXPECT_EQ(assign_ranks(ids),
            (std::vector<std::string>{"a/rollout/0", "b/rollout/0", "b/rollout/1"}));
  EXPECT_TRUE(assign_ranks({"n/reward/0"}).empty());
}

WeightSyncInputs ready() {
  WeightSyncInputs in;
  in.mode = WeightSync::kAuto;
  in.learner_gpu = true;
  in.nccl_built = true;
  in.worker_ids = {"n/rollout/1", "n/reward/0", "n/rollout/0"};
  return in;
}

TEST(WeightSyncPlanTest, NcclWhenEverythingIsThere) {
  for (WeightSync mode : {WeightSync::kAuto, WeightSync::kNccl}) {
    WeightSyncInputs in = ready();
    in.mode = mode;
    WeightSyncPlan plan = plan_weight_sync(in);
    EXPECT_TRUE(plan.nccl);
    EXPECT_TRUE(plan.reason.empty());
    EXPECT_EQ(plan.ranks, (std::vector<std::string>{"n/rollout/0", "n/rollout/1"}));
  }
}

TEST(WeightSyncPlanTest, CheckpointFolderOtherwiseWithTheReason) {
  auto reason_for = [](auto change) {
    WeightSyncInputs in = ready();
    change(in);
    WeightSyncPlan plan = plan_weight_sync(in);
    EXPECT_FALSE(plan.nccl);
    EXPECT_TRUE(plan.ranks.empty());
    return plan.reason;
  };
  EXPECT_EQ(reason_for([](WeightSyncInputs& in) { in.mode = WeightSync::kCheckpoint; }),
            "rollout.weight_sync is checkpoint");
  EXPECT_EQ(reason_for([](WeightSyncInputs& in) { in.nccl_built = false; }),
            "the learner was built without NCCL");
  EXPECT_EQ(reason_for([](WeightSyncInputs& in) { in.learner_gpu = false; }),
            "the learner's policy is not on a GPU");
  EXPECT_EQ(reason_for([](WeightSyncInputs& in) { in.worker_ids = {"n/reward/0"}; }),
            "no rollout worker is registered");
  EXPECT_EQ(reason_for([](WeightSyncInputs& in) { in.disabled_reason = "timeout: x"; }),
            "an NCCL broadcast failed earlier in this run (timeout: x)");
}

TEST(WeightSyncPlanTest, NcclSettingNeedsGpuAndNcclAtStartUp) {
  EXPECT_TRUE(check_weight_sync_setting(WeightSync::kNccl, true, true).ok());
  EXPECT_TRUE(check_weight_sync_setting(WeightSync::kAuto, false, false).ok());
  EXPECT_TRUE(check_weight_sync_setting(WeightSync::kCheckpoint, false, false).ok());
  Status no_nccl = check_weight_sync_setting(WeightSync::kNccl, true, false);
  EXPECT_EQ(no_nccl.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(no_nccl.message().find("rollout.weight_sync: nccl"), std::string::npos);
  EXPECT_NE(no_nccl.message().find("without NCCL"), std::string::npos);
  Status no_gpu = check_weight_sync_setting(WeightSync::kNccl, false, true);
  EXPECT_NE(no_gpu.message().find("not on a GPU"), std::string::npos);
}

}  // namespace
}  // namespace dice
