// Cancellation: callbacks run once on cancel(), at once when registered late, never after their
// registration ended; cancel() waits for nobody but the callbacks.
#include "common/cancellation.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <thread>

namespace dice {
namespace {

TEST(CancellationTest, CallbacksRunOnceAndLateOnesAtOnce) {
  Cancellation cancellation;
  int calls = 0;
  auto registered = cancellation.on_cancel([&] { ++calls; });
  EXPECT_FALSE(cancellation.cancelled());
  EXPECT_EQ(calls, 0);
  cancellation.cancel();
  EXPECT_TRUE(cancellation.cancelled());
  EXPECT_EQ(calls, 1);
  cancellation.cancel();
  EXPECT_EQ(calls, 1) << "cancelled twice";
  auto late = cancellation.on_cancel([&] { ++calls; });
  EXPECT_EQ(calls, 2) << "a callback registered after cancel() runs at once";
}

TEST(CancellationTest, AnEndedRegistrationIsNotCalled) {
  Cancellation cancellation;
  int calls = 0;
  {
    auto registered = cancellation.on_cancel([&] { ++calls; });
  }
  auto moved_from = cancellation.on_cancel([&] { calls += 10; });
  Cancellation::Registration kept = std::move(moved_from);
  kept = Cancellation::Registration();  // ends it
  cancellation.cancel();
  EXPECT_EQ(calls, 0);
  EXPECT_TRUE(cancellation.cancelled());
}

TEST(CancellationTest, EndingARegistrationWaitsForItsCallInProgress) {
  Cancellation cancellation;
  std::atomic<bool> started{false}, finished{false};
  auto registered = std::make_unique<Cancellation::Registration>(cancellation.on_cancel([&] {
    started = true;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    finished = true;
  }));
  std::thread canceller([&] { cancellation.cancel(); });
  while (!started) std::this_thread::yield();
  registered.reset();  // what the callback touches may go away after this
  EXPECT_TRUE(finished);
  canceller.join();
}

TEST(CancellationTest, NoCancellationGivesAnEmptyRegistration) {
  int calls = 0;
  auto none = on_cancel(nullptr, [&] { ++calls; });
  EXPECT_EQ(calls, 0);
}

}  // namespace
}  // namespace dice
