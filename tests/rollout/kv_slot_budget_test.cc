// The rollout worker's KV-cache slots from GPU memory (rollout/kv_slot_budget.h): the KV bytes of
// the SDAR shapes, the share and the free memory as bounds, max_batch as the ceiling, and a clear
// error naming the fields when not one sequence fits.
#include "rollout/kv_slot_budget.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "tools/bench/sdar_shapes.h"

namespace dice {
namespace {

constexpr std::uint64_t kGiB = 1ull << 30;

// SDAR-4B's shape (configs/models/sdar-4b.yaml): 36 layers, 8 key/value heads of 128.
ModelConfig sdar_4b() {
  return bench::sdar_shapes()[1].config;
}

// An H200 alone: 140 GiB, 8 GiB of weights loaded.
SlotBudgetInput h200_alone() {
  SlotBudgetInput in;
  in.model = sdar_4b();
  in.max_sequence_length = 6144;
  in.max_prefill_tokens = 16384;
  in.max_batch = 128;
  in.gpu_memory_fraction = 0.9;
  in.total_bytes = 140 * kGiB;
  in.free_bytes = 131 * kGiB;
  in.weights_bytes = 8 * kGiB;
  return in;
}

TEST(KvSlotBudgetTest, KvBytesPerTokenAreEveryLayersKeysAndValues) {
  // 2 (k, v) x 36 layers x 8 heads x 128 x 2 bytes = 144 KiB, REFERENCE.md's figure for 4B.
  EXPECT_EQ(kv_bytes_per_token(sdar_4b(), 2), 147456u);
}

TEST(KvSlotBudgetTest, AGpuOfItsOwnHoldsAsManyAsFitUpToMaxBatch) {
  SlotBudgetInput in = h200_alone();
  auto budget = kv_slot_budget(in);
  ASSERT_TRUE(budget.ok()) << budget.status().to_string();
  // 126 GiB share - 8 weights, ~1.3 GiB prefill: ~116 GiB over 864 MiB of KV a slot.
  EXPECT_GT(budget->bytes_per_slot, 6144u * 147456u);
  EXPECT_LT(budget->bytes_per_slot, 6144u * 147456u + 64u * (1u << 20));
  EXPECT_GE(budget->slots, 120);
  EXPECT_LE(budget->slots, 128);
  EXPECT_EQ(static_cast<std::uint64_t>(budget->slots),
            std::min<std::uint64_t>(128, budget->room_bytes / budget->bytes_per_slot));
  in.max_batch = 16;
  EXPECT_EQ(kv_slot_budget(in)->slots, 16);  // the ceiling
}

TEST(KvSlotBudgetTest, TheShareAndTheFreeMemoryBothBound) {
  SlotBudgetInput in = h200_alone();
  in.gpu_memory_fraction = 0.45;  // a learner takes the rest
  auto shared = kv_slot_budget(in);
  ASSERT_TRUE(shared.ok());
  // 63 GiB - 8 of weights - prefill: about 63 slots of 864 MiB.
  EXPECT_GE(shared->slots, 58);
  EXPECT_LE(shared->slots, 64);
  in.gpu_memory_fraction = 0.9;
  in.free_bytes = 40 * kGiB;  // a learner already holds most of it
  auto crowded = kv_slot_budget(in);
  ASSERT_TRUE(crowded.ok());
  // 38 GiB after the headroom, less the prefill: about 43.
  EXPECT_GE(crowded->slots, 40);
  EXPECT_LE(crowded->slots, 45);
  EXPECT_LT(crowded->slots, shared->slots);
}

TEST(KvSlotBudgetTest, NotOneSequenceFittingIsAClearError) {
  SlotBudgetInput in = h200_alone();
  in.free_bytes = 3 * kGiB;
  auto budget = kv_slot_budget(in);
  ASSERT_FALSE(budget.ok());
  const std::string why = budget.status().to_string();
  for (const char* name : {"max_sequence_length 6144", "gpu_memory_fraction", "free"}) {
    EXPECT_NE(why.find(name), std::string::npos) << name << " in: " << why;
  }
  in = h200_alone();
  in.weights_bytes = 130 * kGiB;  // weights larger than the share
  EXPECT_FALSE(kv_slot_budget(in).ok());
}

TEST(KvSlotBudgetTest, InputsOutOfRangeAreRefused) {
  for (double fraction : {0.0, -0.5, 1.5}) {
    SlotBudgetInput in = h200_alone();
    in.gpu_memory_fraction = fraction;
    EXPECT_FALSE(kv_slot_budget(in).ok()) << fraction;
  }
  SlotBudgetInput in = h200_alone();
  in.max_batch = 0;
  EXPECT_FALSE(kv_slot_budget(in).ok());
}

TEST(KvSlotBudgetTest, TheDescriptionSaysWhatDecidedIt) {
  const SlotBudgetInput in = h200_alone();
  auto budget = kv_slot_budget(in);
  ASSERT_TRUE(budget.ok());
  const std::string line = budget->describe(in);
  EXPECT_NE(line.find(std::to_string(budget->slots) + " slot(s) of 6144 tokens"), std::string::npos)
      << line;
  EXPECT_NE(line.find("gpu_memory_fraction 0.90"), std::string::npos) << line;
}

}  // namespace
}  // namespace dice
