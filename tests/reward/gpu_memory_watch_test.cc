#include "reward/evaluate/gpu_memory_watch.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <string>
#include <thread>

#include "tests/common/forked_family.h"

namespace dice {
namespace {

constexpr std::uint64_t kMiB = 1 << 20;

// Test double of the driver's account: each pid holds what the test set, until it changes.
class ScriptedGpuMemoryTestDouble : public GpuMemoryReader {
 public:
  void set(pid_t pid, std::uint64_t bytes) {
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto& entry : held_) {
      if (entry.first == pid) {
        entry.second = bytes;
        return;
      }
    }
    held_.emplace_back(pid, bytes);
  }
  void fail_with(const std::string& why) {
    std::lock_guard<std::mutex> lock(mutex_);
    failure_ = why;
  }
  // Every reading throws `why` instead of answering.
  void throw_with(const std::string& why) {
    std::lock_guard<std::mutex> lock(mutex_);
    thrown_ = why;
  }
  int readings() const { return readings_.load(); }
  Result<std::vector<std::pair<pid_t, std::uint64_t>>> process_memory(int ordinal) override {
    readings_.fetch_add(1);
    std::lock_guard<std::mutex> lock(mutex_);
    if (!thrown_.empty()) throw std::runtime_error(thrown_);
    if (!failure_.empty()) return Status::unavailable(failure_);
    last_ordinal_ = ordinal;
    return held_;
  }
  Result<std::uint64_t> total_memory(int) override { return 80 * 1024 * kMiB; }
  int last_ordinal() {
    std::lock_guard<std::mutex> lock(mutex_);
    return last_ordinal_;
  }

 private:
  std::mutex mutex_;
  std::vector<std::pair<pid_t, std::uint64_t>> held_;
  std::string failure_;
  std::string thrown_;
  std::atomic<int> readings_{0};
  int last_ordinal_ = -1;
};

template <typename Pred>
bool within_seconds(double seconds, Pred pred) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (std::chrono::steady_clock::now() < end) {
    if (pred()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return pred();
}

GpuMemoryWatchOptions budget_of(std::uint64_t bytes) {
  GpuMemoryWatchOptions options;
  options.ordinal = 3;
  options.budget_bytes = bytes;
  options.interval_seconds = 0.01;
  return options;
}

TEST(GpuMemoryWatchTest, ATreeOverItsBudgetIsReportedOnceWithWhatItHeld) {
  ForkedFamily family;
  ASSERT_GT(family.grandchild, 0);
  auto driver = std::make_shared<ScriptedGpuMemoryTestDouble>();
  driver->set(family.child, 600 * kMiB);
  std::atomic<int> calls{0};
  GpuMemoryWatch watch(driver, family.child, budget_of(1024 * kMiB), [&] { calls.fetch_add(1); });
  ASSERT_TRUE(within_seconds(2, [&] { return driver->readings() >= 3; }));
  EXPECT_FALSE(watch.over_budget());
  EXPECT_TRUE(watch.saw_the_tree());
  EXPECT_EQ(driver->last_ordinal(), 3);
  // The grandchild's memory is the tree's: 600 + 500 MiB > 1024 MiB.
  driver->set(family.grandchild, 500 * kMiB);
  ASSERT_TRUE(within_seconds(2, [&] { return watch.over_budget(); }));
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(calls.load(), 1);
  EXPECT_EQ(watch.peak_bytes(), 1100 * kMiB);
  EXPECT_NE(watch.detail().find("held 1100 MiB of GPU memory, over its budget of 1024 MiB"),
            std::string::npos)
      << watch.detail();
}

TEST(GpuMemoryWatchTest, OtherProcessesMemoryIsNotTheTrees) {
  ForkedFamily family;
  ASSERT_GT(family.child, 0);
  auto driver = std::make_shared<ScriptedGpuMemoryTestDouble>();
  driver->set(family.child, 100 * kMiB);
  driver->set(getpid(), 70 * 1024 * kMiB);  // a neighbour (here: the parent) holding most
  bool over = false;
  GpuMemoryWatch watch(driver, family.child, budget_of(1024 * kMiB), [&] { over = true; });
  ASSERT_TRUE(within_seconds(2, [&] { return driver->readings() >= 5; }));
  watch.stop();
  EXPECT_FALSE(over);
  EXPECT_FALSE(watch.over_budget());
  EXPECT_EQ(watch.peak_bytes(), 100 * kMiB);
}

TEST(GpuMemoryWatchTest, AWatchThatNeverSeesTheTreeSaysItIsBlind) {
  ForkedFamily family;
  ASSERT_GT(family.child, 0);
  auto driver = std::make_shared<ScriptedGpuMemoryTestDouble>();
  driver->set(424242, 70 * 1024 * kMiB);  // pids numbered in another namespace
  GpuMemoryWatch watch(driver, family.child, budget_of(1024 * kMiB), nullptr);
  ASSERT_TRUE(within_seconds(2, [&] { return driver->readings() >= 3; }));
  watch.stop();
  EXPECT_FALSE(watch.saw_the_tree());
  EXPECT_FALSE(watch.over_budget());
}

TEST(GpuMemoryWatchTest, FailedReadingsAreCountedWithTheirReason) {
  ForkedFamily family;
  auto driver = std::make_shared<ScriptedGpuMemoryTestDouble>();
  driver->fail_with("NVML: GPU 3: GPU is lost");
  GpuMemoryWatch watch(driver, family.child, budget_of(kMiB), nullptr);
  ASSERT_TRUE(within_seconds(2, [&] { return watch.failed_readings() >= 2; }));
  watch.stop();
  EXPECT_EQ(watch.last_error(), "NVML: GPU 3: GPU is lost");
  EXPECT_FALSE(watch.over_budget());
}

// A reading that throws (as libstdc++'s stream buffer did on /proc of a process that had just
// ended, on the H100) is a failed reading: the watch's thread must not end the reward worker.
TEST(GpuMemoryWatchTest, AReadingThatThrowsIsAFailedReadingNotTheWorkersEnd) {
  ForkedFamily family;
  auto driver = std::make_shared<ScriptedGpuMemoryTestDouble>();
  driver->throw_with("basic_filebuf::underflow error reading the file: No such process");
  GpuMemoryWatch watch(driver, family.child, budget_of(kMiB), nullptr);
  ASSERT_TRUE(within_seconds(2, [&] { return watch.failed_readings() >= 2; }));
  watch.stop();
  EXPECT_EQ(watch.last_error(),
            "the reading threw: basic_filebuf::underflow error reading the file: No such process");
  EXPECT_FALSE(watch.over_budget());
}

TEST(GpuMemoryWatchTest, StoppingEndsTheReadingsAtOnce) {
  ForkedFamily family;
  auto driver = std::make_shared<ScriptedGpuMemoryTestDouble>();
  GpuMemoryWatchOptions slow = budget_of(kMiB);
  slow.interval_seconds = 60;
  const auto start = std::chrono::steady_clock::now();
  {
    GpuMemoryWatch watch(driver, family.child, slow, nullptr);
    ASSERT_TRUE(within_seconds(2, [&] { return driver->readings() >= 1; }));
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
}

TEST(GpuMemoryWatchTest, TheDefaultBudgetIsHalfASlotsShare) {
  EXPECT_EQ(default_gpu_memory_budget(80 * 1024 * kMiB, 8), 5 * 1024 * kMiB);
  EXPECT_EQ(default_gpu_memory_budget(80 * 1024 * kMiB, 1), 40 * 1024 * kMiB);
  EXPECT_EQ(default_gpu_memory_budget(80 * 1024 * kMiB, 0), 40 * 1024 * kMiB);
}

TEST(GpuMemoryWatchTest, NvmlIsUnavailableWithAReasonWhereThereIsNoDriver) {
  auto reader = nvml_memory_reader();
  if (reader.ok()) GTEST_SKIP() << "this machine has NVML";
  EXPECT_NE(reader.status().message().find("NVML"), std::string::npos);
}

}  // namespace
}  // namespace dice
