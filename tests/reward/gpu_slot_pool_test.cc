// The GPU slots of a reward worker: callers get slots in the order they asked, a caller that
// avoids a slot gets another (on another GPU when one is free) without holding back those behind
// it, and with one slot it gets that one after the callers already waiting.
#include "reward/gpu_slot_pool.h"

#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <thread>

namespace dice {
namespace {

using namespace std::chrono_literals;

// Waits until `pool` has `n` callers waiting (they queue in the order they reach it).
void wait_for_waiters(const GpuSlotPool& pool, std::size_t n) {
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (pool.waiting() < n && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(1ms);
  }
  ASSERT_EQ(pool.waiting(), n);
}

TEST(GpuSlotPoolTest, GpuOfASlotIsItsNameUpToTheSlash) {
  EXPECT_EQ(gpu_of_slot("3/1"), "3");
  EXPECT_EQ(gpu_of_slot("0"), "0");
}

TEST(GpuSlotPoolTest, AnEmptyPoolEvaluatesWithoutASlot) {
  GpuSlotPool pool({});
  EXPECT_EQ(pool.acquire(), "");
  EXPECT_EQ(pool.acquire("0/0"), "");
  pool.release("");
  EXPECT_EQ(pool.waiting(), 0u);
}

TEST(GpuSlotPoolTest, AvoidingASlotPrefersAnotherGpu) {
  GpuSlotPool pool({"0/0", "0/1", "1/0"});
  EXPECT_EQ(pool.acquire("0/0"), "1/0");
  EXPECT_EQ(pool.acquire("0/0"), "0/1");  // no other GPU free: another slot of the same one
  pool.release("0/1");
  pool.release("1/0");
  EXPECT_EQ(pool.acquire("1/0"), "0/1");
}

TEST(GpuSlotPoolTest, WithOneSlotAvoidingItGetsItAfterTheCallersBefore) {
  GpuSlotPool pool({"0/0"});
  ASSERT_EQ(pool.acquire(), "0/0");
  std::vector<std::string> order;
  std::mutex order_mutex;
  std::thread first([&] {
    const std::string slot = pool.acquire();
    {
      std::lock_guard<std::mutex> lock(order_mutex);
      order.push_back("first:" + slot);
    }
    pool.release(slot);
  });
  wait_for_waiters(pool, 1);
  // The holder's evaluation failed: it gives the slot back and asks again, avoiding it.
  pool.release("0/0");
  const std::string again = pool.acquire("0/0");
  {
    std::lock_guard<std::mutex> lock(order_mutex);
    order.push_back("retry:" + again);
  }
  pool.release(again);
  first.join();
  EXPECT_EQ(order, (std::vector<std::string>{"first:0/0", "retry:0/0"}));
}

TEST(GpuSlotPoolTest, SlotsGoInTheOrderOfAsking) {
  GpuSlotPool pool({"0/0"});
  ASSERT_EQ(pool.acquire(), "0/0");
  std::vector<int> order;
  std::mutex order_mutex;
  std::vector<std::thread> callers;
  for (int i = 0; i < 4; ++i) {
    callers.emplace_back([&, i] {
      const std::string slot = pool.acquire();
      {
        std::lock_guard<std::mutex> lock(order_mutex);
        order.push_back(i);
      }
      pool.release(slot);
    });
    wait_for_waiters(pool, static_cast<std::size_t>(i + 1));
  }
  pool.release("0/0");
  for (auto& t : callers) t.join();
  EXPECT_EQ(order, (std::vector<int>{0, 1, 2, 3}));
}

// A caller whose work the learner cancelled stops waiting at once, holding no slot, and the
// callers behind it move up.
TEST(GpuSlotPoolTest, ACancelledCallerStopsWaitingWithoutASlot) {
  GpuSlotPool pool({"0/0"});
  ASSERT_EQ(pool.acquire(), "0/0");
  Cancellation cancellation;
  auto cancelled = std::async(std::launch::async,
                              [&] { return pool.acquire_unless_cancelled("", &cancellation); });
  wait_for_waiters(pool, 1);
  auto next = std::async(std::launch::async, [&] { return pool.acquire(); });
  wait_for_waiters(pool, 2);
  cancellation.cancel();
  ASSERT_EQ(cancelled.wait_for(10s), std::future_status::ready);
  EXPECT_FALSE(cancelled.get().has_value());
  EXPECT_EQ(pool.waiting(), 1u);
  pool.release("0/0");
  ASSERT_EQ(next.wait_for(10s), std::future_status::ready);
  EXPECT_EQ(next.get(), "0/0") << "the slot went to the caller behind the cancelled one";
  // Cancelled before it asked: no wait at all.
  EXPECT_FALSE(pool.acquire_unless_cancelled("", &cancellation).has_value());
  EXPECT_EQ(pool.waiting(), 0u);
}

// A caller that can use none of the free slots (it avoids the only one) does not keep a later
// caller from it.
TEST(GpuSlotPoolTest, ACallerAvoidingTheFreeSlotDoesNotHoldBackTheNext) {
  GpuSlotPool pool({"0/0", "1/0"});
  ASSERT_EQ(pool.acquire(), "1/0");
  ASSERT_EQ(pool.acquire(), "0/0");
  auto avoiding = std::async(std::launch::async, [&] { return pool.acquire("0/0"); });
  wait_for_waiters(pool, 1);
  auto plain = std::async(std::launch::async, [&] { return pool.acquire(); });
  wait_for_waiters(pool, 2);
  pool.release("0/0");
  ASSERT_EQ(plain.wait_for(10s), std::future_status::ready);
  EXPECT_EQ(plain.get(), "0/0");
  EXPECT_EQ(avoiding.wait_for(50ms), std::future_status::timeout);
  pool.release("1/0");
  ASSERT_EQ(avoiding.wait_for(10s), std::future_status::ready);
  EXPECT_EQ(avoiding.get(), "1/0");
}

}  // namespace
}  // namespace dice
