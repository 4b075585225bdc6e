// PollerRole with a fake clock: who reads the shared socket, and when the background thread steps
// in for consumers that stopped waiting.
#include "net/transport/poller_role.h"

#include <gtest/gtest.h>

namespace dice::transport {
namespace {

using std::chrono::milliseconds;
using TimePoint = PollerRole::Clock::time_point;

constexpr milliseconds kGrace{2};

TimePoint at(int ms) {
  return TimePoint(milliseconds(1000 + ms));
}

TEST(PollerRole, OneHolderAtATime) {
  PollerRole role(kGrace);
  EXPECT_TRUE(role.take_for_consumer());
  EXPECT_TRUE(role.held_by_consumer());
  EXPECT_FALSE(role.take_for_consumer());  // a second consumer waits instead
  role.release_by_consumer(at(0));
  EXPECT_FALSE(role.held());
  EXPECT_TRUE(role.take_for_consumer());
}

TEST(PollerRole, BackgroundPollsWhenNoConsumerEverWaited) {
  PollerRole role(kGrace);
  const PollerRole::Plan plan = role.plan_background(at(0), at(250));
  EXPECT_TRUE(plan.poll);
  EXPECT_EQ(plan.until, at(250));  // wakes for its timers at the latest
  EXPECT_TRUE(role.held());
  EXPECT_FALSE(role.held_by_consumer());
  EXPECT_FALSE(role.take_for_consumer());  // a consumer that comes now waits for the round
  role.release_by_background();
  EXPECT_TRUE(role.take_for_consumer());
}

TEST(PollerRole, BackgroundLeavesTheSocketToAConsumerThatJustLetGo) {
  PollerRole role(kGrace);
  ASSERT_TRUE(role.take_for_consumer());
  role.release_by_consumer(at(0));
  // Within the grace period: the consumer is probably handling what it got and comes back.
  PollerRole::Plan plan = role.plan_background(at(1), at(250));
  EXPECT_FALSE(plan.poll);
  EXPECT_EQ(plan.until, at(2));
  // It did not come back: the background thread reads the socket (credits, acks, heartbeats).
  plan = role.plan_background(at(2), at(250));
  EXPECT_TRUE(plan.poll);
}

TEST(PollerRole, BusyConsumerIsCheckedEachGracePeriodWithoutWakeUps) {
  PollerRole role(kGrace);
  ASSERT_TRUE(role.take_for_consumer());
  role.release_by_consumer(at(0));
  ASSERT_TRUE(role.take_for_consumer());  // back at once: a message per call
  const PollerRole::Plan plan = role.plan_background(at(1), at(250));
  EXPECT_FALSE(plan.poll);
  EXPECT_EQ(plan.until, at(3));
  // Its next release need not wake the background thread, which looks again by itself.
  EXPECT_FALSE(role.release_by_consumer(at(2)));
}

TEST(PollerRole, IdleConsumerSaysWhenItLetsGo) {
  PollerRole role(kGrace);
  ASSERT_TRUE(role.take_for_consumer());
  // Holding for longer than the grace period: waiting for input that does not come.
  const PollerRole::Plan plan = role.plan_background(at(10), at(250));
  EXPECT_FALSE(plan.poll);
  EXPECT_EQ(plan.until, at(250));
  EXPECT_TRUE(role.release_by_consumer(at(20)));  // so the background thread hears of it
  ASSERT_TRUE(role.take_for_consumer());
  EXPECT_FALSE(role.release_by_consumer(at(21)));  // once
}

TEST(PollerRole, WaitingConsumersKeepTheBackgroundThreadOff) {
  PollerRole role(kGrace);
  role.consumer_waits();
  EXPECT_EQ(role.consumers_waiting(), 1u);
  PollerRole::Plan plan = role.plan_background(at(100), at(250));
  EXPECT_FALSE(plan.poll);
  EXPECT_EQ(plan.until, at(102));
  role.consumer_done_waiting();
  plan = role.plan_background(at(102), at(250));
  EXPECT_TRUE(plan.poll);
}

}  // namespace
}  // namespace dice::transport
