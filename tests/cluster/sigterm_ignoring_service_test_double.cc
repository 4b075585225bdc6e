// Test double for a dice service that does not stop on SIGTERM (a hung drain): prints its command
// line and runs until SIGKILL. Used to test that `dice-cluster down` SIGKILLs after the drain
// timeout.
#include <signal.h>
#include <unistd.h>

#include <cstdio>

int main(int argc, char** argv) {
  signal(SIGTERM, SIG_IGN);
  signal(SIGINT, SIG_IGN);
  std::printf("sigterm_ignoring_service_test_double args:");
  for (int i = 1; i < argc; ++i) std::printf(" %s", argv[i]);
  std::printf("\n");
  std::fflush(stdout);
  while (true) pause();
}
