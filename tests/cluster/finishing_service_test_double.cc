// Test double for a learner that finishes its run: prints two step lines a moment apart, then
// exits 0 (as dice-learner does after its last step). Used by the `dice-cluster wait` tests.
#include <chrono>
#include <cstdio>
#include <thread>

int main() {
  for (int step = 1; step <= 2; ++step) {
    std::printf("step %d/2 of phase test candidates_per_s=1.00 eta_s=%d\n", step, 2 - step);
    std::fflush(stdout);
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
  }
  std::printf("learner done steps=2\n");
  return 0;
}
