// A stand-in service for shutdown_signal_test: installs a ShutdownSignal, says "ready" on stdout,
// then works items one at a time until asked to stop, always finishing the item in hand.
//   shutdown_test_double ITEM_MS   each item takes ITEM_MS milliseconds
// Prints "ready", "shutdown requested" (once, when it notices), "finished N" per item and
// "drained N" before exiting 0.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include "net/service/shutdown_signal.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s ITEM_MS\n", argv[0]);
    return 2;
  }
  const auto item_time = std::chrono::milliseconds(std::atoi(argv[1]));
  auto shutdown = dice::service::ShutdownSignal::install();
  if (!shutdown.ok()) {
    std::fprintf(stderr, "%s\n", shutdown.status().to_string().c_str());
    return 1;
  }
  auto& signal = *shutdown.value();
  signal.on_shutdown([] {
    std::printf("shutdown requested\n");
    std::fflush(stdout);
  });
  int finished = 0;
  while (!signal.requested()) {
    // "ready" once the first item is in hand: a signal sent after it always finds an item in
    // flight (printed before the loop, a quick signal could stop the loop before any item).
    if (finished == 0) {
      std::printf("ready\n");
      std::fflush(stdout);
    }
    // One in-flight item: simulated work that does not look at the signal until it is done.
    std::this_thread::sleep_for(item_time);
    ++finished;
    std::printf("finished %d\n", finished);
    std::fflush(stdout);
  }
  std::printf("drained %d\n", finished);
  std::fflush(stdout);
  return 0;
}
