// on_ranks(): runs fn(rank) on a thread per rank of a data-parallel group and joins them, as
// DataParallel::run drives its replicas; for tests of the collectives and what uses them.
#pragma once

#include <thread>
#include <vector>

namespace dice::testing_util {

template <class Fn>
void on_ranks(int world, Fn fn) {
  std::vector<std::thread> threads;
  for (int r = 0; r < world; ++r) threads.emplace_back(fn, r);
  for (std::thread& t : threads) t.join();
}

}  // namespace dice::testing_util
