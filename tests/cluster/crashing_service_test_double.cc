// Test double for a dice service that crashes: prints its command line, exits 1 after 50 ms.
// Used by the dice-cluster tests to exercise restarts and giving up. Built a second time as
// bad_input_service_test_double with DICE_EXIT_STATUS=2: a service refusing its input.
#include <time.h>

#include <cstdio>

#ifndef DICE_EXIT_STATUS
#define DICE_EXIT_STATUS 1
#endif

int main(int argc, char** argv) {
  std::printf("crashing_service_test_double args:");
  for (int i = 1; i < argc; ++i) std::printf(" %s", argv[i]);
  std::printf("\ncrashing_service_test_double: exiting with status %d\n", DICE_EXIT_STATUS);
  std::fflush(stdout);
  timespec pause{0, 50 * 1000 * 1000};
  nanosleep(&pause, nullptr);
  return DICE_EXIT_STATUS;
}
