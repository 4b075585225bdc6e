// Test double for a dice service (learner, rollout or reward): prints the command line it was
// given, then runs until SIGTERM or SIGINT, and exits 0. Used by the dice-cluster tests in place
// of the real services.
#include <signal.h>

#include <cstdio>

int main(int argc, char** argv) {
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGTERM);
  sigaddset(&stop, SIGINT);
  sigprocmask(SIG_BLOCK, &stop, nullptr);
  std::printf("sleepy_service_test_double args:");
  for (int i = 1; i < argc; ++i) std::printf(" %s", argv[i]);
  std::printf("\n");
  std::fflush(stdout);
  int sig = 0;
  sigwait(&stop, &sig);
  std::printf("sleepy_service_test_double: got signal %d, exiting\n", sig);
  return 0;
}
