// sandbox_bench: what one sandboxed process costs, alone and under concurrency, with and without
// namespaces. Each run is `python -E -s -c CODE` (default "import ast", what the static checks
// start with).
//
//   sandbox_bench [--python python3] [--runs 48] [--concurrency 1,4,12] [--code CODE]
//                 [--modes pool,none] [--memory-mb 2048] [--data-limit]
//                 [--max-processes 64] [--root] [--env KEY=VALUE]... [--show-failures]
//
// Modes: pool = namespaces, the network one leased from NetnsPool (what evaluations use);
// none = no namespaces (parser_sandbox). (The `fresh` mode of the figures recorded in
// docs/BENCHMARKS.md, a network namespace created per run, went with the sandbox option that fed
// only it; the bench of commit 10d538a still has it.)
// Prints, per (mode, concurrency): runs/s, wall seconds per run at p50 / p99 / max, failures
// (a run that hangs shows as a 120 s max), and the namespaces the pool created during that row
// (it grows to the concurrency plus two spares). `--python /bin/true` measures the sandbox's own
// cost per run. The
// limit flags make it a probe of what a candidate process may do, e.g. whether CUDA starts inside
// the evaluator's limits:
//   sandbox_bench --runs 1 --concurrency 1 --data-limit --memory-mb 65536 --show-failures
//     --env CUDA_VISIBLE_DEVICES=0 --code "import torch; assert torch.cuda.device_count() > 0"
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "reward/sandbox/sandbox.h"
#include "reward/sandbox/sandbox_netns.h"

namespace {

struct Flags {
  std::string python = "python3";
  int runs = 48;
  std::vector<int> concurrency = {1, 4, 12};
  std::vector<std::string> modes = {"pool", "none"};
  std::string code = "import ast";
  std::int64_t memory_mb = 2048;  // 0 = no memory rlimit
  bool data_limit = false;        // RLIMIT_DATA instead of RLIMIT_AS (as GPU evaluations use)
  int max_processes = 64;
  bool root = false;  // keep root instead of a uid of its own
  std::vector<std::string> env;
  bool show_failures = false;
};

bool parse(int argc, char** argv, Flags* flags) {
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--data-limit" || arg == "--root" || arg == "--show-failures") {
      (arg == "--data-limit" ? flags->data_limit
       : arg == "--root"     ? flags->root
                             : flags->show_failures) = true;
      continue;
    }
    if (i + 1 >= argc) return false;
    const std::string value = argv[++i];
    if (arg == "--python") {
      flags->python = value;
    } else if (arg == "--code") {
      flags->code = value;
    } else if (arg == "--memory-mb") {
      flags->memory_mb = std::atoll(value.c_str());
    } else if (arg == "--max-processes") {
      flags->max_processes = std::atoi(value.c_str());
    } else if (arg == "--env") {
      flags->env.push_back(value);
    } else if (arg == "--runs") {
      flags->runs = std::atoi(value.c_str());
    } else if (arg == "--modes") {
      flags->modes.clear();
      std::stringstream in(value);
      std::string item;
      while (std::getline(in, item, ',')) {
        if (item != "pool" && item != "none") {
          std::fprintf(stderr, "sandbox_bench: --modes: unknown mode \"%s\" (pool, none)\n",
                       item.c_str());
          return false;
        }
        flags->modes.push_back(item);
      }
    } else if (arg == "--concurrency") {
      flags->concurrency.clear();
      std::stringstream in(value);
      std::string item;
      while (std::getline(in, item, ',')) flags->concurrency.push_back(std::atoi(item.c_str()));
    } else {
      return false;
    }
  }
  return flags->runs > 0 && !flags->concurrency.empty() && !flags->modes.empty();
}

}  // namespace

int main(int argc, char** argv) {
  Flags flags;
  if (!parse(argc, argv, &flags)) {
    std::fprintf(stderr,
                 "usage: sandbox_bench [--python P] [--runs N] [--concurrency 1,4,12] [--code C] "
                 "[--modes pool,none] [--memory-mb N] [--data-limit] [--max-processes N] "
                 "[--root] [--env K=V]... [--show-failures]\n");
    return 2;
  }
  std::mutex print_mutex;
  std::printf("%-6s %5s %8s %8s %8s %8s %8s %s\n", "mode", "conc", "runs/s", "p50_s", "p99_s",
              "max_s", "failures", "ns_created");
  for (const std::string& mode : flags.modes) {
    for (int concurrency : flags.concurrency) {
      const std::int64_t created_before = dice::NetnsPool::shared().stats().created;
      std::vector<double> walls(static_cast<size_t>(flags.runs));
      std::atomic<int> next{0}, failures{0};
      const auto start = std::chrono::steady_clock::now();
      std::vector<std::thread> threads;
      for (int t = 0; t < concurrency; ++t) {
        threads.emplace_back([&] {
          for (int i = next++; i < flags.runs; i = next++) {
            dice::SandboxSpec spec;
            spec.isolate = mode != "none";
            spec.timeout_seconds = 120;
            spec.memory_limit_mb = flags.memory_mb;
            spec.limit_data_not_address_space = flags.data_limit;
            spec.max_processes = flags.max_processes;
            spec.env = flags.env;
            if (flags.root) spec.uid = spec.gid = -1;
            spec.argv = {flags.python, "-E", "-s", "-c", flags.code};
            auto r = dice::run_sandboxed(spec);
            if (!r.ok() || !r->succeeded()) {
              ++failures;
              if (flags.show_failures) {
                std::lock_guard<std::mutex> lock(print_mutex);
                std::fprintf(
                    stderr, "--- run %d failed: %s\n%s\n", i,
                    r.ok() ? dice::describe_sandbox_result(*r).c_str()
                           : r.status().to_string().c_str(),
                    r.ok() ? r->stderr_text
                                 .substr(r->stderr_text.size() > 3000 ? r->stderr_text.size() - 3000
                                                                      : 0)
                                 .c_str()
                           : "");
              }
            }
            walls[static_cast<size_t>(i)] = r.ok() ? r->wall_seconds : -1;
          }
        });
      }
      for (auto& t : threads) t.join();
      const double total =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      std::sort(walls.begin(), walls.end());
      auto at = [&](double q) {
        return walls[std::min(walls.size() - 1, static_cast<size_t>(q * walls.size()))];
      };
      std::printf(
          "%-6s %5d %8.1f %8.3f %8.3f %8.3f %8d %lld\n", mode.c_str(), concurrency,
          flags.runs / total, at(0.5), at(0.99), walls.back(), failures.load(),
          static_cast<long long>(dice::NetnsPool::shared().stats().created - created_before));
      std::fflush(stdout);
    }
  }
  return 0;
}
