// Compile pipeline: a candidate file -> its load_inline sources (python/extract_sources.py, by
// parsing) -> two translation units (split_sources.h where it applies, else binding.h) -> nvcc for
// the .cu and the host compiler for the binding, run at the same time, then one link into a Python
// extension module. The units use light headers first (none for split kernels, else lean ones)
// and the full <torch/extension.h> only when that fails. A compile error that the diagnostics
// show to be the candidate's own (compile_diagnostics.h: a syntax error, a name, member or
// argument count of its own, a name no header spells...) ends the build in the light tier that
// saw it, and stops the tier's other compiler, instead of compiling again with the full headers,
// which could not fix it: on the H200 a compile error took 26-60 s against 10-15 s for a success,
// and an RL step waits for its slowest compile. What the reader is unsure of still moves on.
//
// Builds run on a pool of `jobs` threads and land in a cache folder keyed by
// kernel_source_hash(sources, flags, toolchain identity):
//
//   <cache_dir>/<hash>/<name><ext_suffix>     the module the runner (runner.py) imports
//   <cache_dir>/<hash>/kernels.cu, binding.cpp the generated sources (for debugging)
//
// A build happens in <cache_dir>/<hash>.build-<n> and is renamed into place when it links, so a
// reader never sees half a module. Modules and the cache have size budgets, with least recently
// used entries evicted (compile_cache.h). Requests for a hash that is being built wait for that
// build instead of starting another (within one worker; two workers sharing a cache folder may
// build the same hash twice, and the second rename loses harmlessly).
//
// Every compiler process runs in the sandbox (no network, rlimits, unprivileged uid): a source
// can run code at compile time only through the compiler, and it should not reach anything.
// What a build may cost is bounded (compile_limits.h): one wall-clock budget per candidate across
// all of its tiers and modules, and a memory budget that concurrent builds reserve what builds
// are measured to use from, starting only while the host has it. Failure
// excerpts quote only the candidate's own files (compile_log.h).
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "common/status.h"
#include "reward/compile/binding.h"
#include "reward/compile/binding_pch.h"
#include "reward/compile/compile_limits.h"
#include "reward/compile/compile_log.h"
#include "reward/compile/header_names.h"
#include "reward/compile/toolchain.h"
#include "reward/sandbox/sandbox.h"
#include "schemas/verdict.capnp.h"

namespace dice {

// Optimisation flag of the binding file: argument conversion, the candidate's cpp_sources and, in
// split builds, its host code (tensor checks, allocation, launches through the stubs). No kernel
// code: -O1 keeps the small inline functions inlined at less than -O3's CPU (load_inline itself
// passes no -O). Part of the cache key.
inline constexpr char kBindingOptimization[] = "-O1";

struct CompileOptions {
  // Builds at once. Default: 4
  int jobs = 4;
  // Cache folder (created if missing). Required.
  std::string cache_dir;
  // Wall-clock budget of one candidate's compile, seconds: every module, header tier and link
  // of it together (compile_limits.h); each compiler process runs with what is left. Default: 300
  double timeout_seconds = 300;
  // Address-space limit of each compiler process, MiB. cicc maps a lot, but nvcc with the full
  // <torch/extension.h> (Debian's torch 1.13) compiled within 3072 on the dev VM. Default: 8192
  std::int64_t memory_limit_mb = 8192;
  // MiB the builds of this compiler hold at once: each reserves build_memory_mb while it runs,
  // and waits while that does not fit, or while the host's available memory does not cover it
  // (compile_limits.h). 0 = three quarters of the host's memory (default_compile_memory_mb()).
  // Default: 0
  std::int64_t memory_budget_mb = 0;
  // MiB one build reserves from memory_budget_mb: what a build's processes hold at their peak
  // (nvcc, its stages and the host compiler side by side), measured, with a margin; not a limit
  // (memory_limit_mb bounds each process), and never more than 2 x memory_limit_mb
  // (build_reservation_mb()). Default: kBuildMemoryMb
  std::int64_t build_memory_mb = kBuildMemoryMb;
  // Lines of compiler output kept in a failure's excerpt. Default: 20
  int error_lines = 20;
  // Optimisation flag of nvcc (the kernels and the .cu's host code); the binding file's is
  // kBindingOptimization. Part of the cache key. Default: -O3
  std::string optimization = "-O3";
  // Run compilers as this uid when root (-1 = as root; kUniqueSandboxUid = a uid of its own per
  // build, so parallel builds do not share one RLIMIT_NPROC count). Default: kUniqueSandboxUid
  int uid = kUniqueSandboxUid;
  // Precompile the binding file's headers once per toolchain (binding_pch.h). Default: true
  bool precompiled_binding_prelude = true;
  // Before the torch header tiers (lean, then full), build kernels without torch headers and the
  // host code in the binding file (split_sources.h), where that keeps load_inline's meaning. Split
  // builds compile the binding file with TorchHeaders::kAten's headers where
  // aten_binding_applies() (binding.h), and again with kSlim's if that fails (the kernels' object
  // is kept). Off: the header tiers alone (tools/bench/reward/split_compile_bench's lean mode).
  // Part of the cache key. Default: true
  bool split_host_device = true;
  // Host paths bound read-only into every compiler's root (reward.sandbox.root_binds), besides
  // the toolchain's include and library folders, which are always there. Default: none
  std::vector<std::string> root_binds;
  // A cgroup per compiler process (reward.sandbox.cgroups). Default: kAuto
  SandboxCgroups cgroups = SandboxCgroups::kAuto;
  // Largest build a candidate may leave in the cache, MiB: the module and its generated sources
  // (the linker cannot write a larger file either). Larger is the candidate's RESOURCE_LIMIT
  // and is not cached: a 450 MB module was published and kept (issue 49). Default: 128
  std::int64_t max_module_mb = 128;
  // MiB the cache's builds may hold (compile_cache.h): after each build the least recently used
  // entries are removed until the rest fit; 0 = no limit. Default: 20480
  std::int64_t cache_budget_mb = 20480;
  // Entries used (built or hit) within this many seconds are never removed, whatever the budget:
  // a worker sharing the folder may be about to read them. Default: 3600
  double cache_keep_seconds = 3600;
  // MiB kept free on the cache's disk: before a build, least recently used entries go while less
  // is free, and a build that still would not fit (twice max_module_mb: the module and the
  // objects beside it) is not started but answered INTERNAL_ERROR naming the disk, instead of a
  // compiler meeting a full disk and the candidate's code read as wrong. 0 = the disk is not
  // looked at. Default: 1024
  std::int64_t cache_min_free_mb = 1024;
};

struct CompileOutcome {
  // NONE, COMPILE_ERROR, COMPILE_TIMEOUT (the budget ran out), RESOURCE_LIMIT (a compiler ran out
  // of memory or was killed), or INTERNAL_ERROR / SANDBOX_UNAVAILABLE (the cache folder is not
  // writable, the compiler could not start, no compile memory came free...).
  schema::FailureClass failure = schema::FailureClass::NONE;
  std::string log_excerpt;  // trimmed compiler output on failure (compile_log.h)
  std::string source_hash;
  std::string module_path;  // the built module on success
  std::string module_name;
  bool cache_hit = false;
  double seconds = 0;  // wall clock of this build (0 on a cache hit)
  // The tiers the build compiled, in order: "split", "split-slim-binding" (the split's binding
  // again with kSlim's headers), "lean", "slim", "full". Empty on a cache hit.
  std::vector<std::string> tiers;
  double memory_wait_seconds = 0;  // waited for compile memory before the build started
};

// Sources of every load_inline call in the candidate file, or the reason they cannot be read
// statically (returned as kInvalidArgument: the candidate's fault -> compileError).
Result<std::vector<ExtensionSources>> extract_extension_sources(const std::string& candidate_source,
                                                                const std::string& python,
                                                                const std::string& script_dir,
                                                                const SandboxSpec& sandbox);

// The cache key of one extension's build; `scheme` names a compile scheme other than the
// default one (empty: the key is the same as before schemes were keyed).
std::string extension_hash(const ExtensionSources& ext, const Toolchain& toolchain,
                           const std::string& optimization, const std::string& scheme = "");

// The cache key a Compiler with `options` builds `ext` under: extension_hash() with every
// option that changes the module (nvcc's and the binding's optimisation, the split scheme).
std::string extension_hash(const ExtensionSources& ext, const Toolchain& toolchain,
                           const CompileOptions& options);

class Compiler {
 public:
  Compiler(Toolchain toolchain, CompileOptions options);
  ~Compiler();  // finishes queued builds' promises with INTERNAL_ERROR and joins the pool
  Compiler(const Compiler&) = delete;
  Compiler& operator=(const Compiler&) = delete;

  // Queues a build; the future is ready at once on a cache hit. The builds of one candidate share
  // its `budget` (compile_limits.h); none: a budget of options.timeout_seconds of its own. A
  // build of the same source already in flight is shared, with the budget it started with.
  std::shared_future<CompileOutcome> submit(const ExtensionSources& ext,
                                            std::shared_ptr<CompileBudget> budget = nullptr);
  CompileOutcome compile(const ExtensionSources& ext) { return submit(ext).get(); }

  // Builds the binding prelude's precompiled headers that builds use (binding_pch.h: kSlim's,
  // and kAten's with split_host_device), at the same time, and returns once each is ready or
  // has failed: how many are ready (one that a build is making at the time counts as not ready;
  // neither builds nor this wait for it). A worker calls it when it starts, so that its first
  // builds do not compile without them (in a cold judge of the 60 dev items on the H200, 16
  // builds compiled without while the two were built, 23 and 34 s, beside them). The names the
  // full headers could declare (header_names.h) are read beside them, so that no candidate's
  // clock pays for it.
  int prepare_binding_headers();

  size_t queue_depth() const;
  const MemoryBudget& memory() const { return memory_; }
  const Toolchain& toolchain() const { return toolchain_; }
  // Builds that compiled only with the full <torch/extension.h> (binding.h: TorchHeaders).
  std::uint64_t full_header_builds() const { return full_header_builds_.load(); }
  // Builds whose .cu did not compile with the lean headers (and was retried with heavier ones).
  std::uint64_t lean_header_fallbacks() const { return lean_header_fallbacks_.load(); }
  // Builds that ended with a compile error in a light tier (split, lean, slim) because its
  // diagnostics show the candidate's own error (compile_diagnostics.h): decided in one try.
  std::uint64_t own_error_builds() const { return own_error_builds_.load(); }
  // Builds that did not end as split builds (split_host_device on): the split did not apply,
  // or did not compile or link (then the build went on with torch headers).
  std::uint64_t split_fallbacks() const { return split_fallbacks_.load(); }
  // Split builds whose binding did not compile with TorchHeaders::kAten's headers and was
  // compiled again with kSlim's.
  std::uint64_t aten_binding_fallbacks() const { return aten_binding_fallbacks_.load(); }
  // Compiles saved because the other unit of their tier failed in a way that settles it
  // (compile_build.cc): never started in a tier after a failed one, whose failed unit (compiled
  // first) failed again or ran out of its budget (UnitOrder), or stopped where both compiled at
  // once (compile_together).
  std::uint64_t units_not_compiled() const { return units_not_compiled_.load(); }

 private:
  struct Job {
    ExtensionSources ext;
    std::string hash;
    std::shared_ptr<CompileBudget> budget;
    std::promise<CompileOutcome> promise;
  };
  class Build;  // one build from sources to a cached module (compile_build.cc)
  void worker_loop();
  CompileOutcome build(const ExtensionSources& ext, const std::string& hash, CompileBudget& budget);
  // The uid compilers run as, from CompileOptions::uid: kUniqueSandboxUid leases one into
  // `lease` when root (as another user, compilers run as that user: -1).
  static int compiler_uid(int configured, std::optional<SandboxUid>* lease);
  // The limits every compiler process runs in, as `uid` (-1: as this process's).
  SandboxSpec compiler_sandbox(int uid) const;
  std::string module_file(const std::string& hash, const std::string& name) const;
  // The names the full headers could declare (header_names.h), read once per toolchain and
  // process by the first build whose compile error asks; none where they could not be listed
  // completely (then no error is decided by them).
  const HeaderNames* header_names();
  // Before a build: room on the cache's disk (options.cache_min_free_mb); an error when there is
  // none even after evicting.
  Status make_room();
  // After a build: evicts least recently used entries over options.cache_budget_mb.
  void evict_over_budget();

  Toolchain toolchain_;
  CompileOptions options_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Job> queue_;
  std::map<std::string, std::shared_future<CompileOutcome>> in_flight_;
  bool closed_ = false;
  std::vector<std::thread> workers_;
  std::uint64_t build_counter_ = 0;
  std::atomic<std::uint64_t> full_header_builds_{0};
  std::atomic<std::uint64_t> lean_header_fallbacks_{0};
  std::atomic<std::uint64_t> own_error_builds_{0};
  std::atomic<std::uint64_t> split_fallbacks_{0};
  std::atomic<std::uint64_t> units_not_compiled_{0};
  std::atomic<std::uint64_t> aten_binding_fallbacks_{0};
  std::mutex eviction_mu_;  // one eviction pass at a time (a build finding it held skips its own)
  std::set<std::string> aten_operators_;    // per_operator_headers() of the toolchain
  std::vector<std::string> binding_flags_;  // the binding compile's flags shared by all builds
  std::unique_ptr<BindingPch> binding_pch_;
  std::once_flag header_names_once_;
  std::shared_ptr<const HeaderNames> header_names_;
  MemoryBudget memory_;
  std::vector<std::string> public_include_roots_;  // CompileLogPolicy::public_roots
};

}  // namespace dice
