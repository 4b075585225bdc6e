#include "reward/evaluate/gpu_turns.h"

#include <atomic>
#include <chrono>
#include <future>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

namespace dice {
namespace {

using std::chrono::milliseconds;
const GpuTurns::Patience kNow(0);
const GpuTurns::Patience kLong(30);

// Until a timing waits for the GPU: its thread may start late on a loaded machine.
void wait_until_a_timing_waits(GpuTurns& turns) {
  for (int i = 0; i < 3000 && turns.timings_waiting() == 0; ++i) {
    std::this_thread::sleep_for(milliseconds(10));
  }
  ASSERT_EQ(turns.timings_waiting(), 1);
}

TEST(GpuTurnsTest, CheckingSharesTheGpuAndTimingHasItAlone) {
  GpuTurns turns;
  ASSERT_TRUE(turns.enter_shared(kNow));
  ASSERT_TRUE(turns.enter_shared(kNow));      // two candidates checked side by side
  EXPECT_FALSE(turns.enter_exclusive(kNow));  // no timing while they are
  turns.leave_shared();
  turns.leave_shared();
  ASSERT_TRUE(turns.enter_exclusive(kNow));
  EXPECT_FALSE(turns.enter_shared(kNow));     // nor a check while one is timed
  EXPECT_FALSE(turns.enter_exclusive(kNow));  // nor a second timing
  turns.leave_exclusive();
  EXPECT_TRUE(turns.enter_shared(kNow));
  turns.leave_shared();
}

TEST(GpuTurnsTest, AWaitingTimingHoldsNewChecksBackAndGoesWhenTheLastCheckEnds) {
  GpuTurns turns;
  ASSERT_TRUE(turns.enter_shared(kNow));
  auto timing = std::async(std::launch::async, [&] { return turns.enter_exclusive(kLong); });
  ASSERT_NO_FATAL_FAILURE(wait_until_a_timing_waits(turns));
  EXPECT_EQ(timing.wait_for(milliseconds(200)), std::future_status::timeout);
  // A new check may not start now: a stream of them would starve the timing.
  EXPECT_FALSE(turns.enter_shared(GpuTurns::Patience(0.1)));
  turns.leave_shared();
  EXPECT_TRUE(timing.get());
  turns.leave_exclusive();
  EXPECT_TRUE(turns.enter_shared(kNow));
  turns.leave_shared();
}

TEST(GpuTurnsTest, ATimingThatGivesUpLetsChecksIn) {
  GpuTurns turns;
  ASSERT_TRUE(turns.enter_shared(kNow));  // a hung candidate's check
  auto timing =
      std::async(std::launch::async, [&] { return turns.enter_exclusive(GpuTurns::Patience(1)); });
  ASSERT_NO_FATAL_FAILURE(wait_until_a_timing_waits(turns));
  auto check = std::async(std::launch::async, [&] { return turns.enter_shared(kLong); });
  // Held back behind the waiting timing...
  EXPECT_EQ(check.wait_for(milliseconds(200)), std::future_status::timeout);
  // ...until it gives up.
  EXPECT_FALSE(timing.get());
  EXPECT_TRUE(check.get());
  turns.leave_shared();
  turns.leave_shared();
  EXPECT_TRUE(turns.enter_exclusive(kNow));
  turns.leave_exclusive();
}

TEST(GpuTurnsTest, TimingsTakeTheGpuOneAtATime) {
  GpuTurns turns;
  std::atomic<int> timing{0};
  std::atomic<bool> overlapped{false};
  auto timed = [&] {
    GpuTurn turn(&turns);
    EXPECT_TRUE(turn.share(kLong));
    EXPECT_TRUE(turn.take_alone(kLong));  // from a shared turn: left first, or two would deadlock
    if (++timing > 1) overlapped = true;
    std::this_thread::sleep_for(milliseconds(20));
    --timing;
  };
  std::vector<std::future<void>> all;
  for (int i = 0; i < 8; ++i) all.push_back(std::async(std::launch::async, timed));
  for (auto& f : all) f.get();
  EXPECT_FALSE(overlapped.load());
  EXPECT_TRUE(turns.enter_exclusive(kNow));  // every GpuTurn left what it held
  turns.leave_exclusive();
}

TEST(GpuTurnsTest, WithoutTurnsEveryTurnComesAtOnce) {
  GpuTurn turn(nullptr);
  EXPECT_TRUE(turn.share(kNow));
  EXPECT_TRUE(turn.take_alone(kNow));
}

TEST(GpuTurnsTest, ATurnKnowsWhetherAnotherEvaluationSharedTheGpuWithIt) {
  GpuTurns turns;
  GpuTurn alone(&turns);
  ASSERT_TRUE(alone.share(kNow));
  EXPECT_FALSE(alone.had_company());
  alone.leave();
  EXPECT_FALSE(alone.had_company()) << "the GPU was its own while it held a turn";

  GpuTurn first(&turns), second(&turns), third(&turns);
  ASSERT_TRUE(first.share(kNow));
  ASSERT_TRUE(second.share(kNow));  // came while first held its turn
  EXPECT_TRUE(first.had_company());
  EXPECT_TRUE(second.had_company());  // first was there when it came
  first.leave();
  second.leave();
  ASSERT_TRUE(third.share(kNow));  // came after both had left
  EXPECT_FALSE(third.had_company());
  third.leave();
  EXPECT_TRUE(first.had_company()) << "company, once had, is remembered after leaving";
}

TEST(GpuTurnsTest, TakingTheTurnHeldAlreadyNeverLetsAnotherInBetween) {
  GpuTurns turns;
  GpuTurn turn(&turns);
  ASSERT_TRUE(turn.take_alone(kNow));
  // A check waiting for the GPU: a take_alone that left and took the turn again would let it in.
  std::atomic<bool> checked{false};
  std::thread check([&] {
    GpuTurn other(&turns);
    checked = other.share(kLong);
  });
  std::this_thread::sleep_for(milliseconds(50));
  EXPECT_TRUE(turn.take_alone(kNow));
  EXPECT_FALSE(checked.load());
  turn.leave();
  check.join();
  EXPECT_TRUE(checked.load());
}

}  // namespace
}  // namespace dice
