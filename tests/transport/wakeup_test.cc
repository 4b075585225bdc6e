// Wakeup: the wait that sleeps on a socket's descriptor and an eventfd, with and without the spin
// before it sleeps. A pipe stands in for ZeroMQ's descriptor.
#include "net/transport/wakeup.h"

#include <gtest/gtest.h>
#include <sched.h>
#include <unistd.h>

#include <chrono>
#include <ctime>
#include <functional>
#include <thread>

namespace dice::transport {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

struct Pipe {
  Pipe() { EXPECT_EQ(pipe(fds), 0); }
  ~Pipe() {
    close(fds[0]);
    close(fds[1]);
  }
  void make_readable() const { ASSERT_EQ(write(fds[1], "x", 1), 1); }
  int fds[2] = {-1, -1};
};

double wait_ms(Wakeup& wakeup, int fd, int timeout_ms) {
  const auto start = Clock::now();
  wakeup.wait(fd, timeout_ms);
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

TEST(WakeupSpin, AutoSpinsOnlyWithEightOrMoreCpus) {
  cpu_set_t set;
  CPU_ZERO(&set);
  ASSERT_EQ(sched_getaffinity(0, sizeof(set), &set), 0);
  EXPECT_EQ(resolve_spin_us(kAutoSpin), CPU_COUNT(&set) >= 8 ? kAutoSpinMicros : 0);
  EXPECT_EQ(resolve_spin_us(0), 0);
  EXPECT_EQ(resolve_spin_us(7), 7);
  EXPECT_EQ(resolve_spin_us(-5), 0);  // not auto, not a spin: none
}

class WakeupWaitTest : public ::testing::TestWithParam<int> {};

// Spins of 0 (sleeps at once) and 500 ms (the event comes while it spins).
INSTANTIATE_TEST_SUITE_P(Spins, WakeupWaitTest, ::testing::Values(0, 500000));

// Waits (timeout 10 s) while another thread runs `event` 20 ms in; the wait must end with it.
void expect_wait_ends_with(Wakeup& wakeup, const Pipe& pipe, const std::function<void()>& event) {
  std::thread other([&] {
    std::this_thread::sleep_for(milliseconds(20));
    event();
  });
  const double waited = wait_ms(wakeup, pipe.fds[0], 10000);
  other.join();
  EXPECT_GE(waited, 15.0);
  EXPECT_LT(waited, 5000.0);
}

TEST_P(WakeupWaitTest, ReturnsWhenTheOtherDescriptorBecomesReadable) {
  Wakeup wakeup(GetParam());
  Pipe pipe;
  expect_wait_ends_with(wakeup, pipe, [&] { pipe.make_readable(); });
}

TEST_P(WakeupWaitTest, ReturnsWhenNotified) {
  Wakeup wakeup(GetParam());
  Pipe pipe;
  expect_wait_ends_with(wakeup, pipe, [&] { wakeup.notify(); });
  // The poke is consumed. The notifier's write may land just after the waiter cleared the eventfd
  // (it saw the flag first), which wakes one later wait early: the one after sleeps in full.
  if (wait_ms(wakeup, pipe.fds[0], 30) < 25.0) {
    EXPECT_GE(wait_ms(wakeup, pipe.fds[0], 30), 25.0);
  }
}

TEST_P(WakeupWaitTest, APokeBeforeTheWaitIsNotLost) {
  Wakeup wakeup(GetParam());
  Pipe pipe;
  wakeup.notify();
  EXPECT_LT(wait_ms(wakeup, pipe.fds[0], 10000), 1000.0);
}

double thread_cpu_ms() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

// Spinning is what the setting buys: the waiting thread stays on its CPU until the event, where
// without a spin it sleeps (no CPU) until the same event.
TEST(WakeupSpin, ASpinningWaitStaysOnItsCpuAndASleepingOneDoesNot) {
  for (const int spin_us : {0, 500000}) {
    Wakeup wakeup(spin_us);
    Pipe pipe;
    std::thread writer([&] {
      std::this_thread::sleep_for(milliseconds(50));
      pipe.make_readable();
    });
    const double cpu_before = thread_cpu_ms();
    wait_ms(wakeup, pipe.fds[0], 10000);
    const double cpu = thread_cpu_ms() - cpu_before;
    writer.join();
    if (spin_us == 0) {
      EXPECT_LT(cpu, 10.0) << "a wait without a spin used the CPU";
    } else {
      EXPECT_GT(cpu, 10.0) << "a spinning wait slept";
    }
  }
}

TEST(WakeupSpin, ASpinNeverOutlastsTheTimeout) {
  Pipe pipe;
  Wakeup wakeup(2000000);  // 2 s of spin, 30 ms of timeout
  const double waited = wait_ms(wakeup, pipe.fds[0], 30);
  EXPECT_GE(waited, 25.0);
  EXPECT_LT(waited, 1000.0);
}

TEST(WakeupSpin, TimeoutHoldsWhetherOrNotItSpins) {
  Pipe pipe;
  Wakeup short_spin(1000);  // spins 1 ms, then sleeps the rest
  const double waited = wait_ms(short_spin, pipe.fds[0], 40);
  EXPECT_GE(waited, 38.0);
  EXPECT_LT(waited, 5000.0);
  // A zero timeout checks once and returns: no spin, whatever the setting.
  Wakeup long_spin(2000000);
  EXPECT_LT(wait_ms(long_spin, pipe.fds[0], 0), 1000.0);
}

}  // namespace
}  // namespace dice::transport
