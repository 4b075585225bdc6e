// Compile pipeline: a candidate file -> its load_inline sources (python/extract_sources.py, by
// parsing) -> two translation units (split_sources.h where it applies, else binding.h) -> nvcc for
// the .cu and the host compiler for the binding, run at the same time, then one link into a Python
// extension module. The units use slim LibTorch headers first and the full <torch/extension.h> only
// when that fails.
//
// Builds run on a pool of `jobs` threads and land in a cache folder keyed by
// kernel_source_hash(sources, flags, toolchain identity):
//
//   <cache_dir>/<hash>/<name><ext_suffix>     the module evaluate.py imports
//   <cache_dir>/<hash>/kernels.cu, binding.cpp the generated sources (for debugging)
//
// A build happens in <cache_dir>/<hash>.build-<n> and is renamed into place when it links, so a
// reader never sees half a module. Requests for a hash that is being built wait for that build
// instead of starting another (within one worker; two workers sharing a cache folder may build
// the same hash twice, and the second rename loses harmlessly).
//
// Every compiler process runs in the sandbox (no network, rlimits, unprivileged uid): a source
// can run code at compile time only through the compiler, and it should not reach anything.
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "common/status.h"
#include "reward/binding.h"
#include "reward/binding_pch.h"
#include "reward/sandbox.h"
#include "reward/toolchain.h"
#include "schemas/verdict.capnp.h"

namespace dice {

struct CompileOptions {
  // Builds at once. Default: 4
  int jobs = 4;
  // Cache folder (created if missing). Required.
  std::string cache_dir;
  // Wall-clock limit of each compiler process, seconds. Default: 300
  double timeout_seconds = 300;
  // Address-space limit of each compiler process, MiB (cicc maps a lot). Default: 16384
  std::int64_t memory_limit_mb = 16384;
  // Lines of compiler output kept in a failure's excerpt. Default: 20
  int error_lines = 20;
  // Optimisation flag of nvcc (the kernels and the .cu's host code). Default: -O3
  std::string optimization = "-O3";
  // Optimisation flag of the binding file: argument conversion, the candidate's cpp_sources and,
  // in split builds, its host code (tensor checks, allocation, launches through the stubs). No
  // kernel code: -O1 keeps the small inline functions inlined at less than -O3's CPU (load_inline
  // itself passes no -O). Part of the cache key. Default: -O1
  std::string binding_optimization = "-O1";
  // Run compilers as this uid when root (-1 = as root; kUniqueSandboxUid = a uid of its own per
  // build, so parallel builds do not share one RLIMIT_NPROC count). Default: kUniqueSandboxUid
  int uid = kUniqueSandboxUid;
  // Precompile the binding file's headers once per toolchain (binding_pch.h). Default: true
  bool precompiled_binding_prelude = true;
  // Try the .cu with TorchHeaders::kLean first (binding.h), then kSlim, then kFull. Default: true
  bool lean_kernel_headers = true;
  // Before those, build kernels without torch headers and the host code in the binding file
  // (split_sources.h), where that keeps load_inline's meaning. Part of the cache key.
  // Default: true
  bool split_host_device = true;
  // Split builds compile the binding file with TorchHeaders::kAten's headers where
  // aten_binding_applies() (binding.h), and again with kSlim's if that fails (the kernels' object
  // is kept). Part of the cache key. Default: true
  bool aten_binding_headers = true;
};

struct CompileOutcome {
  // NONE, COMPILE_ERROR, COMPILE_TIMEOUT, RESOURCE_LIMIT, or INTERNAL_ERROR (the cache folder
  // is not writable, the compiler could not start...).
  schema::FailureClass failure = schema::FailureClass::NONE;
  std::string log_excerpt;  // trimmed compiler output on failure
  std::string source_hash;
  std::string module_path;  // the built module on success
  std::string module_name;
  bool cache_hit = false;
  double seconds = 0;  // wall clock of this build (0 on a cache hit)
};

// Sources of every load_inline call in the candidate file, or the reason they cannot be read
// statically (returned as kInvalidArgument: the candidate's fault -> compileError).
Result<std::vector<ExtensionSources>> extract_extension_sources(const std::string& candidate_source,
                                                                const std::string& python,
                                                                const std::string& script_dir,
                                                                const SandboxSpec& sandbox);

// Error lines of a compiler's output: each line that mentions an error, with the line after it,
// up to `max_lines`; the first lines when there is no such line.
std::string trim_compiler_log(const std::string& output, int max_lines);

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

  // Queues a build; the future is ready at once on a cache hit.
  std::shared_future<CompileOutcome> submit(const ExtensionSources& ext);
  CompileOutcome compile(const ExtensionSources& ext) { return submit(ext).get(); }

  // Builds the binding prelude's precompiled headers that builds use (binding_pch.h: kSlim's,
  // and kAten's with aten_binding_headers), at the same time, and returns once each is ready or
  // has failed: how many are ready (one that a build is making at the time counts as not ready;
  // neither builds nor this wait for it). A worker calls it when it starts, so that its first
  // builds do not compile without them (in a cold judge of the 60 dev items on the H200, 16
  // builds compiled without while the two were built, 23 and 34 s, beside them).
  int prepare_binding_headers();

  size_t queue_depth() const;
  const Toolchain& toolchain() const { return toolchain_; }
  // Builds that compiled only with the full <torch/extension.h> (binding.h: TorchHeaders).
  std::uint64_t full_header_builds() const { return full_header_builds_.load(); }
  // Builds whose .cu did not compile with the lean headers (and was retried with the slim ones).
  std::uint64_t lean_header_fallbacks() const { return lean_header_fallbacks_.load(); }
  // Builds that did not end as split builds (split_host_device on): the split did not apply,
  // or did not compile or link (then the build went on with torch headers).
  std::uint64_t split_fallbacks() const { return split_fallbacks_.load(); }
  // Split builds whose binding did not compile with TorchHeaders::kAten's headers and was
  // compiled again with kSlim's.
  std::uint64_t aten_binding_fallbacks() const { return aten_binding_fallbacks_.load(); }

 private:
  struct Job {
    ExtensionSources ext;
    std::string hash;
    std::promise<CompileOutcome> promise;
  };
  void worker_loop();
  CompileOutcome build(const ExtensionSources& ext, const std::string& hash);
  // The limits every compiler process runs in, as `uid` (-1: as this process's).
  SandboxSpec compiler_sandbox(int uid) const;
  std::string module_file(const std::string& hash, const std::string& name) const;

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
  std::atomic<std::uint64_t> split_fallbacks_{0};
  std::atomic<std::uint64_t> aten_binding_fallbacks_{0};
  std::set<std::string> aten_operators_;    // per_operator_headers() of the toolchain
  std::vector<std::string> binding_flags_;  // the binding compile's flags shared by all builds
  std::unique_ptr<BindingPch> binding_pch_;
};

}  // namespace dice
