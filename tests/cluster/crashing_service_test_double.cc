// Test double for a dice service that crashes: prints its command line, exits 1 after 50 ms.
// Used by the dice-cluster tests to exercise restarts and giving up.
#include <time.h>

#include <cstdio>

int main(int argc, char** argv) {
  std::printf("crashing_service_test_double args:");
  for (int i = 1; i < argc; ++i) std::printf(" %s", argv[i]);
  std::printf("\ncrashing_service_test_double: exiting with status 1\n");
  std::fflush(stdout);
  timespec pause{0, 50 * 1000 * 1000};
  nanosleep(&pause, nullptr);
  return 1;
}
