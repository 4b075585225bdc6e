// One build of an extension, from its sources to a module in the compile cache (Compiler::build):
//
//   check names and flags -> reserve what a build uses -> a build folder of its own ->
//   the split build (kernels without torch headers, split_sources.h), where it applies ->
//   else the header tiers: lean, then full (a plain compile error moves to the next tier unless
//   its diagnostics show the candidate's own error, compile_diagnostics.h; a timeout, the memory
//   or a crash ends the build: compile_limits.h); after a failed split build the full headers
//   alone; a tier after a failed one compiles the unit that failed first, and the other only
//   if it compiles; where both compile at once, a failure that settles the tier stops the
//   other -> link ->
//   the size limit (compile_cache.h) -> hand the folder to the worker's uid and rename it into the
//   cache (after which the worker evicts what is over the cache's budget).
//
// Every compiler process runs sandboxed within what is left of the candidate's budget; a
// failure's excerpt quotes only the candidate's files (compile_log.h).
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <future>
#include <tuple>

#include "common/log.h"
#include "common/remove_tree.h"
#include "common/seconds_since.h"
#include "reward/compile/compile.h"
#include "reward/compile/compile_cache.h"
#include "reward/compile/compile_diagnostics.h"
#include "reward/compile/split_sources.h"

namespace dice {
namespace {

namespace fs = std::filesystem;
using FC = schema::FailureClass;
using SteadyClock = std::chrono::steady_clock;

// nvcc flags every candidate was written against (load_inline's defaults): half/bfloat16
// operators come from torch's headers, not CUDA's, and constexpr host functions are usable in
// device code.
const std::vector<std::string> kNvccBaseFlags = {"-D__CUDA_NO_HALF_OPERATORS__",
                                                 "-D__CUDA_NO_HALF_CONVERSIONS__",
                                                 "-D__CUDA_NO_BFLOAT16_CONVERSIONS__",
                                                 "-D__CUDA_NO_HALF2_OPERATORS__",
                                                 "--expt-relaxed-constexpr",
                                                 "-std=c++17",
                                                 "--compiler-options",
                                                 "-fPIC"};

bool is_identifier(const std::string& s) {
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) return false;
  for (char c : s) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
  }
  return true;
}

// nvcc runs its host steps through /bin/sh with the flags in the command text: a flag of the
// candidate's reaches this far only from extract_sources.py's allow-list, and is checked again
// here to be made of characters no shell reads (extract_sources.py: SHELL_INERT) before any
// compiler starts.
bool shell_inert(const std::string& flag) {
  if (flag.empty()) return false;
  for (char c : flag) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && std::strchr("_.+=:,/-", c) == nullptr) {
      return false;
    }
  }
  return true;
}

Status write_file(const std::string& path, const std::string& contents) {
  std::ofstream out(path, std::ios::binary);
  out << contents;
  out.close();
  if (!out) return Status::io_error("cannot write " + path);
  return Status::ok_status();
}

// Removes the build folder unless it was renamed into the cache.
struct FolderCleanup {
  std::string dir;
  ~FolderCleanup() {
    if (!dir.empty()) remove_tree(dir).ignore();
  }
};

}  // namespace

class Compiler::Build {
 public:
  Build(Compiler& compiler, const ExtensionSources& ext, const std::string& hash,
        CompileBudget& budget)
      : c_(compiler), ext_(ext), hash_(hash), budget_(budget), start_(SteadyClock::now()) {
    out_.source_hash = hash;
    out_.module_name = ext.name;
    module_name_ = ext.name + c_.toolchain_.ext_suffix;
  }

  CompileOutcome run() {
    if (auto failed = check_names()) return *failed;
    if (auto failed = reserve_memory()) return *failed;
    if (auto failed = make_build_dir()) return *failed;
    prepare();
    budget_.start();
    bool linked = false;
    if (auto failed = build_split(&linked)) return *failed;
    if (!linked) {
      if (auto failed = build_with_torch_headers()) return *failed;
    }
    return publish();
  }

 private:
  CompileOutcome fail(FC kind, std::string excerpt) {
    out_.failure = kind;
    out_.log_excerpt = std::move(excerpt);
    out_.seconds = seconds_since(start_);
    return out_;
  }

  std::optional<CompileOutcome> check_names() {
    if (!is_identifier(ext_.name)) {
      return fail(FC::COMPILE_ERROR, "extension name is not an identifier");
    }
    for (const auto& f : ext_.functions) {
      if (!is_identifier(f))
        return fail(FC::COMPILE_ERROR, "function " + f + " is not an identifier");
    }
    for (const auto* flags : {&ext_.extra_cuda_cflags, &ext_.extra_cflags, &ext_.extra_ldflags}) {
      for (const auto& flag : *flags) {
        if (!shell_inert(flag)) {
          return fail(FC::COMPILE_ERROR, "flag '" + flag +
                                             "' is not allowed: a flag may hold letters, digits "
                                             "and _ . + = : , / - only");
        }
      }
    }
    return std::nullopt;
  }

  // What a build uses, before anything runs (compile_limits.h). The wait is bounded: each build
  // holding memory ends within its budget, and at most the other jobs' builds and the two prelude
  // builds are ahead of this one (a host short of memory for longer fails the build as ours).
  std::optional<CompileOutcome> reserve_memory() {
    const CompileOptions& o = c_.options_;
    const double wait_limit = o.timeout_seconds * (std::max(1, o.jobs) + 2);
    Result<MemoryBudget::Reservation> memory =
        c_.memory_.reserve(build_reservation_mb(o.build_memory_mb, o.memory_limit_mb), wait_limit);
    out_.memory_wait_seconds = seconds_since(start_);
    if (!memory.ok())
      return fail(FC::INTERNAL_ERROR, "compile memory: " + memory.status().message());
    memory_ = std::move(memory).value();
    if (out_.memory_wait_seconds > 1) {
      DICE_LOG(Info) << "build waited for compile memory" << kv("hash", hash_)
                     << kv("seconds", out_.memory_wait_seconds)
                     << kv("budget_mb", c_.memory_.total_mb()) << kv("build_mb", memory_.mb());
    }
    return std::nullopt;
  }

  // One uid for the whole build (both compilers and the link write the same folder).
  std::optional<CompileOutcome> make_build_dir() {
    build_uid_ = compiler_uid(c_.options_.uid, &uid_lease_);
    {
      std::lock_guard<std::mutex> lock(c_.mu_);
      build_dir_ = c_.options_.cache_dir + "/" + hash_ + ".build-" + std::to_string(getpid()) +
                   "-" + std::to_string(c_.build_counter_++);
    }
    remove_tree(build_dir_).ignore();
    std::error_code ec;
    fs::create_directories(build_dir_, ec);
    if (ec) return fail(FC::INTERNAL_ERROR, "cannot create " + build_dir_);
    cleanup_.dir = build_dir_;
    return std::nullopt;
  }

  // The compiler commands, the sandbox they share, and (before the candidate's clock starts) the
  // split (pure text work) and the binding preludes it needs: a prelude's one-off build is the
  // service's cost, not the candidate's.
  void prepare() {
    const Toolchain& tc = c_.toolchain_;
    const std::string name_define = "-DTORCH_EXTENSION_NAME=" + ext_.name;
    nvcc_ = {tc.nvcc,
             "-c",
             "kernels.cu",
             "-o",
             "kernels.o",
             name_define,
             "-DTORCH_API_INCLUDE_EXTENSION_H",
             tc.defines[0],
             c_.options_.optimization};
    nvcc_.insert(nvcc_.end(), kNvccBaseFlags.begin(), kNvccBaseFlags.end());
    const std::string arch = tc.arch.substr(3);
    nvcc_.push_back("-gencode=arch=compute_" + arch + ",code=sm_" + arch);
    for (const auto& dir : tc.include_paths) nvcc_.push_back("-I" + dir);
    nvcc_.insert(nvcc_.end(), ext_.extra_cuda_cflags.begin(), ext_.extra_cuda_cflags.end());
    cxx_ = {tc.cxx, "-c", "binding.cpp", "-o", "binding.o"};
    cxx_.insert(cxx_.end(), c_.binding_flags_.begin(), c_.binding_flags_.end());
    cxx_.push_back(name_define);
    cxx_.insert(cxx_.end(), ext_.extra_cflags.begin(), ext_.extra_cflags.end());

    base_ = c_.compiler_sandbox(build_uid_);
    base_.workdir = build_dir_;
    if (c_.options_.split_host_device) split_.emplace(split_host_device(ext_));
    split_applies_ = split_ && split_->ok();
    aten_ = split_applies_ && aten_binding_applies(ext_.cpp_sources, split_->value().host_part);
    // The precompiled prelude only where the flags are the shared ones (a candidate's own
    // extra_cflags would make g++ ignore it anyway).
    if (c_.binding_pch_ && ext_.extra_cflags.empty()) {
      preludes_[TorchHeaders::kSlim] = c_.binding_pch_->header_for(TorchHeaders::kSlim, base_);
      if (aten_) {
        preludes_[TorchHeaders::kAten] = c_.binding_pch_->header_for(TorchHeaders::kAten, base_);
      }
    }
    for (const auto& [headers, prelude] : preludes_) {
      if (!prelude.empty()) {
        base_.read_only_paths.push_back(fs::path(prelude).parent_path().string());
      }
    }
    log_policy_.build_dir = build_dir_;
    log_policy_.public_roots = c_.public_include_roots_;
  }

  // The budget left for the next compiler process, or a COMPILE_TIMEOUT outcome when none is.
  std::optional<CompileOutcome> budget_left(double* seconds) {
    *seconds = budget_.seconds_left();
    if (*seconds > 0) return std::nullopt;
    plain_error_ = false;
    std::string tried;
    for (const auto& t : out_.tiers) tried += (tried.empty() ? "" : ", ") + t;
    return fail(FC::COMPILE_TIMEOUT,
                "compile budget of " + std::to_string(static_cast<int>(budget_.seconds())) +
                    " s spent (tiers tried: " + (tried.empty() ? "none" : tried) + ")");
  }

  // A compiler's failed run as the build's outcome (`which` names the compiler for the excerpt).
  CompileOutcome compiler_failed(const SandboxResult& r, const std::string& which) {
    const CompilerFailure why = classify_compiler_failure(r);
    plain_error_ = why.plain_error;
    if (why.failure == FC::COMPILE_TIMEOUT) {
      return fail(why.failure, "compile budget of " +
                                   std::to_string(static_cast<int>(budget_.seconds())) +
                                   " s ran out in tier " + out_.tiers.back() + " (" + which +
                                   describe_sandbox_result(r) + ")");
    }
    if (why.failure == FC::SANDBOX_UNAVAILABLE) {
      return fail(why.failure, which + "not run: " + r.unavailable_reason);
    }
    const std::string how =
        why.plain_error ? "" : "(" + describe_sandbox_result(r) + ", not retried) ";
    return fail(why.failure, which + how +
                                 compiler_log_excerpt(r.stderr_text + r.stdout_text, log_policy_,
                                                      c_.options_.error_lines));
  }

  // kernels.cu (unless `binding_only`: it compiled in a call before) and binding.cpp for one tier,
  // owned by the build's uid.
  std::optional<CompileOutcome> write_sources(TorchHeaders headers, const SplitSources* split,
                                              TorchHeaders binding_headers, bool binding_only) {
    const auto prelude_it = preludes_.find(binding_headers);
    const std::string prelude = prelude_it == preludes_.end() ? "" : prelude_it->second;
    Status written =
        binding_only ? Status::ok_status()
                     : write_file(build_dir_ + "/kernels.cu",
                                  split ? split->device_unit
                                        : cuda_translation_unit(ext_, headers, c_.aten_operators_));
    if (written.ok()) {
      written = write_file(
          build_dir_ + "/binding.cpp",
          binding_translation_unit(ext_, binding_headers, prelude, split ? split->host_part : ""));
    }
    if (!written.ok()) return fail(FC::INTERNAL_ERROR, written.message());
    if (geteuid() == 0 && build_uid_ >= 0) {
      for (const auto& p : {build_dir_, build_dir_ + "/kernels.cu", build_dir_ + "/binding.cpp"}) {
        if (chown(p.c_str(), build_uid_, build_uid_) != 0) {
          return fail(FC::INTERNAL_ERROR, "cannot chown " + p);
        }
      }
    }
    return std::nullopt;
  }

  // How a tier runs its two compilers: at the same time, or one after the other, the second only
  // when the first compiled. A tier after one that failed with a plain error starts with the
  // unit that failed there: where that unit fails again (the candidate's own error, which the
  // lighter tier could not tell from missing headers), the other, heavy with torch's headers, is
  // never compiled. Most of an RL step's compile seconds are such failures (docs/BENCHMARKS.md,
  // "The learning experiment on the H100").
  enum class UnitOrder { kTogether, kKernelsFirst, kBindingFirst };

  // Whether a compiler's failed run settles its tier, so that the other compiler's result would
  // not be read: a timeout, the memory or a crash (the build ends), any error where no heavier
  // tier follows (`decide` none), or a plain error the diagnostics read as the candidate's own.
  bool settles_tier(const SandboxResult& r, bool binding,
                    const std::optional<DiagnosticsScope>& decide) const {
    if (r.succeeded()) return false;
    if (!classify_compiler_failure(r).plain_error || !decide) return true;
    return read_compile_errors(r.stderr_text + r.stdout_text, ext_, *decide,
                               binding ? DiagnosticsCompiler::kHostCxx : DiagnosticsCompiler::kNvcc,
                               c_.header_names())
        .own_error;
  }

  // Both compilers at once. The first to fail in a way that settles the tier stops the other: in
  // an RL step most failing builds are the candidate's own errors, which nvcc reports in a second
  // or two while the binding still compiles torch's headers. A compiler stopped so comes back as
  // none (not run); one that ended before the stop keeps its result.
  void compile_together(const SandboxSpec& nvcc_spec, const SandboxSpec& cxx_spec,
                        const std::optional<DiagnosticsScope>& decide,
                        std::optional<Result<SandboxResult>>* nvcc_run,
                        std::optional<Result<SandboxResult>>* cxx_run) {
    Result<std::unique_ptr<SandboxProcess>> nvcc = SandboxProcess::start(nvcc_spec);
    Result<std::unique_ptr<SandboxProcess>> cxx = SandboxProcess::start(cxx_spec);
    if (!nvcc.ok() || !cxx.ok()) {  // the worker's own problem: the build ends as ours
      if (!nvcc.ok()) *nvcc_run = nvcc.status();
      if (!cxx.ok()) *cxx_run = cxx.status();
      return;
    }
    std::atomic<bool> nvcc_stopped{false}, cxx_stopped{false};
    auto wait_for = [&](SandboxProcess& self, double timeout, bool binding, SandboxProcess& other,
                        std::atomic<bool>& other_stopped) {
      SandboxResult r = self.wait(timeout);
      if (settles_tier(r, binding, decide)) {
        other_stopped = true;
        other.kill_now();
      }
      return r;
    };
    auto cxx_future = std::async(std::launch::async, [&] {
      return wait_for(**cxx, cxx_spec.timeout_seconds, true, **nvcc, nvcc_stopped);
    });
    SandboxResult nvcc_result =
        wait_for(**nvcc, nvcc_spec.timeout_seconds, false, **cxx, cxx_stopped);
    SandboxResult cxx_result = cxx_future.get();
    for (auto [stopped, result, run] : {std::tuple{&nvcc_stopped, &nvcc_result, nvcc_run},
                                        std::tuple{&cxx_stopped, &cxx_result, cxx_run}}) {
      if (*stopped && result->signal == SIGKILL && !result->timed_out) {
        ++c_.units_not_compiled_;
      } else {
        *run = std::move(*result);
      }
    }
  }

  // Both translation units with one header set (or split: the kernels without torch, the host
  // code in the binding file), compiled in `order`. With `binding_only` only the binding file
  // compiles. An error result is the first failure, ready to return (a plain error that
  // `decide` reads as the candidate's own, own_error_, before another); `binding_failed` says
  // whether it was the binding's compile error (the .cu compiled). `decide`: how to read plain
  // errors (compile_diagnostics.h), none where no heavier tier follows.
  std::optional<CompileOutcome> compile_objects(const char* tier, TorchHeaders headers,
                                                const SplitSources* split,
                                                TorchHeaders binding_headers, bool binding_only,
                                                bool* binding_failed,
                                                std::optional<DiagnosticsScope> decide,
                                                UnitOrder order = UnitOrder::kTogether) {
    if (binding_failed != nullptr) *binding_failed = false;
    plain_error_ = false;  // until a compiler says so: the service's own failures end the build
    own_error_ = false;
    failed_unit_.reset();
    double seconds_left = 0;
    if (auto spent = budget_left(&seconds_left)) return spent;
    out_.tiers.emplace_back(tier);
    if (auto failed = write_sources(headers, split, binding_headers, binding_only)) return failed;
    SandboxSpec nvcc_spec = base_, cxx_spec = base_;
    nvcc_spec.argv = nvcc_;
    cxx_spec.argv = cxx_;
    for (SandboxSpec* spec : {&nvcc_spec, &cxx_spec}) {
      spec->timeout_seconds = std::min(spec->timeout_seconds, seconds_left);
    }
    // Each none when not run: kernels.o is there (binding_only), or the first of an ordered pair
    // failed.
    std::optional<Result<SandboxResult>> nvcc_run, cxx_run;
    if (binding_only) {
      cxx_run = run_sandboxed(cxx_spec);
    } else if (order == UnitOrder::kTogether) {
      compile_together(nvcc_spec, cxx_spec, decide, &nvcc_run, &cxx_run);
    } else {
      const bool kernels_first = order == UnitOrder::kKernelsFirst;
      std::optional<Result<SandboxResult>>& first = kernels_first ? nvcc_run : cxx_run;
      std::optional<Result<SandboxResult>>& second = kernels_first ? cxx_run : nvcc_run;
      SandboxSpec& second_spec = kernels_first ? cxx_spec : nvcc_spec;
      first = run_sandboxed(kernels_first ? nvcc_spec : cxx_spec);
      if (first->ok() && first->value().succeeded()) {
        if (auto spent = budget_left(&seconds_left)) return spent;
        second_spec.timeout_seconds = std::min(second_spec.timeout_seconds, seconds_left);
        second = run_sandboxed(second_spec);
      } else {
        ++c_.units_not_compiled_;
      }
    }
    const Result<SandboxResult>* binding_run = cxx_run ? &*cxx_run : nullptr;
    const Result<SandboxResult>* plain = nullptr;  // the first plain compile error
    std::vector<const Result<SandboxResult>*> plain_runs;
    const Result<SandboxResult>* kernels_run = nvcc_run ? &*nvcc_run : nullptr;
    for (const auto* run : {kernels_run, binding_run}) {
      if (run == nullptr) continue;
      if (!run->ok()) return fail(FC::INTERNAL_ERROR, run->status().message());
      if (run->value().succeeded()) continue;
      // A timeout, the memory or a crash of either compiler ends the build, even where the other
      // one only had a plain error.
      if (!classify_compiler_failure(run->value()).plain_error) {
        return compiler_failed(run->value(), compiler_name(run == binding_run));
      }
      if (plain == nullptr) plain = run;
      plain_runs.push_back(run);
    }
    if (plain == nullptr) return std::nullopt;
    for (const auto* run : plain_runs) {
      if (!decide) break;
      const SandboxResult& r = run->value();
      const CompileErrorReading reading = read_compile_errors(
          r.stderr_text + r.stdout_text, ext_, *decide,
          run == binding_run ? DiagnosticsCompiler::kHostCxx : DiagnosticsCompiler::kNvcc,
          c_.header_names());
      DICE_LOG(Debug) << "compile error read" << kv("hash", hash_) << kv("tier", tier)
                      << kv("compiler", run == binding_run ? "c++" : "nvcc")
                      << kv("own_error", reading.own_error) << kv("why", reading.why);
      if (reading.own_error) {
        own_error_ = true;
        plain = run;
        break;
      }
    }
    if (binding_failed != nullptr) *binding_failed = plain == binding_run;
    failed_unit_ = plain == binding_run ? UnitOrder::kBindingFirst : UnitOrder::kKernelsFirst;
    return compiler_failed(plain->value(), compiler_name(plain == binding_run));
  }

  // RESOURCE_LIMIT for a build larger than max_module_mb (compile_cache.h): never cached.
  CompileOutcome module_too_large(const std::string& what) {
    return fail(FC::RESOURCE_LIMIT, what + " over the limit of " +
                                        std::to_string(c_.options_.max_module_mb) +
                                        " MiB (reward.compile_max_module_mb): not cached");
  }

  static const char* compiler_name(bool binding) {
    return binding ? "c++ (cpp_sources): " : "nvcc (cuda_sources): ";
  }

  // A light tier's error that is the candidate's own ends the build there: the heavier headers
  // would end it the same way, a compile later.
  std::optional<CompileOutcome> own_error_ends_build(std::optional<CompileOutcome> failed) {
    ++c_.own_error_builds_;
    DICE_LOG(Debug) << "compile error is the candidate's own; no heavier headers tried"
                    << kv("hash", hash_) << kv("tier", out_.tiers.back());
    return failed;
  }

  std::optional<CompileOutcome> link_module() {
    plain_error_ = false;
    failed_unit_.reset();
    double seconds_left = 0;
    if (auto spent = budget_left(&seconds_left)) return spent;
    const Toolchain& tc = c_.toolchain_;
    std::vector<std::string> link = {tc.cxx,      "-shared", "kernels.o",
                                     "binding.o", "-o",      module_name_};
    for (const auto& dir : tc.library_paths) link.push_back("-L" + dir);
    for (const auto& lib : tc.torch_libraries) link.push_back("-l" + lib);
    link.insert(link.end(), ext_.extra_ldflags.begin(), ext_.extra_ldflags.end());
    SandboxSpec link_spec = base_;
    link_spec.argv = link;
    // A larger module is refused after the link anyway (publish): the linker stops there.
    link_spec.max_output_mb = std::min(link_spec.max_output_mb, c_.options_.max_module_mb + 1);
    link_spec.timeout_seconds = std::min(link_spec.timeout_seconds, seconds_left);
    Result<SandboxResult> link_run = run_sandboxed(link_spec);
    if (!link_run.ok()) return fail(FC::INTERNAL_ERROR, link_run.status().message());
    if (!link_run->succeeded()) {
      const SandboxResult& r = link_run.value();
      const std::string log = r.stderr_text + r.stdout_text;
      if (r.signal == SIGXFSZ || log.find("File size limit exceeded") != std::string::npos) {
        plain_error_ = false;  // no other tier: the module would be as large
        return module_too_large("the linked module is");
      }
      return compiler_failed(r, "link: ");
    }
    return std::nullopt;
  }

  // The split build first: where it does not apply, or does not compile or link, the build goes
  // on as if it had not been tried (*linked false), so its errors are never the candidate's. Only
  // a plain compile error goes on: a split build that ran out of time or memory ends the build.
  std::optional<CompileOutcome> build_split(bool* linked) {
    *linked = false;
    if (!split_) return std::nullopt;
    std::optional<CompileOutcome> failed;
    if (split_applies_) {
      bool binding_failed = false;
      failed = compile_objects("split", TorchHeaders::kSlim, &split_->value(),
                               aten_ ? TorchHeaders::kAten : TorchHeaders::kSlim, false,
                               &binding_failed, DiagnosticsScope::kSplit);
      if (failed && own_error_) return own_error_ends_build(std::move(failed));
      if (failed && aten_ && binding_failed && plain_error_) {
        // The host code needs more of torch than kAten has: kSlim's binding, same kernels.o.
        DICE_LOG(Debug) << "binding failed with the ATen headers; retrying with the slim ones"
                        << kv("hash", hash_);
        ++c_.aten_binding_fallbacks_;
        failed = compile_objects("split-slim-binding", TorchHeaders::kSlim, &split_->value(),
                                 TorchHeaders::kSlim, true, nullptr, DiagnosticsScope::kSplit);
        if (failed && own_error_) return own_error_ends_build(std::move(failed));
      }
      if (!failed) failed = link_module();
      if (failed && !plain_error_) return failed;  // out of time or memory, or the service's own
      *linked = !failed;
      split_failed_ = !*linked;
    }
    if (!*linked) {
      ++c_.split_fallbacks_;
      DICE_LOG(Debug) << "split build not used; building with torch headers" << kv("hash", hash_)
                      << kv("why", split_applies_ ? "it failed to build: " + failed->log_excerpt
                                                  : split_->status().message());
    }
    return std::nullopt;
  }

  // The leanest headers first (most kernels need nothing else); a plain compile error there may
  // only mean the source uses more of torch, so the full headers decide before it counts as the
  // candidate's. After a failed split build the kernels have been tried without torch already,
  // and the full headers decide at once. The slim tier between lean and full only ever made a
  // build cheaper that the full headers would also make, while a candidate whose own code is
  // broken (most failures of an RL step) compiled in every tier: on the H200 a compile error took
  // 61.5 s against 10 s for a success (2026-12-02; docs/BENCHMARKS.md, "names fixed, 20 SFT
  // epochs"). Where the toolchain has no per-operator headers, the slim ones stand for the lean.
  std::optional<CompileOutcome> build_with_torch_headers() {
    struct Tier {
      const char* name;
      TorchHeaders kernels, binding;  // the binding file has no lean form (binding.h)
    };
    std::vector<Tier> tiers;
    if (!split_failed_) {
      if (!c_.aten_operators_.empty()) {
        tiers.push_back({"lean", TorchHeaders::kLean, TorchHeaders::kSlim});
      } else {
        tiers.push_back({"slim", TorchHeaders::kSlim, TorchHeaders::kSlim});
      }
    }
    tiers.push_back({"full", TorchHeaders::kFull, TorchHeaders::kFull});
    std::optional<CompileOutcome> failed;
    for (const Tier& tier : tiers) {
      const bool last = tier.kernels == TorchHeaders::kFull;
      // After a tier (or the split build) that failed with a plain error: that unit first.
      const UnitOrder order = failed_unit_.value_or(UnitOrder::kTogether);
      failed = compile_objects(
          tier.name, tier.kernels, nullptr, tier.binding, false, nullptr,
          last ? std::nullopt : std::optional<DiagnosticsScope>(DiagnosticsScope::kHeaders), order);
      if (!failed) {
        if (last) ++c_.full_header_builds_;
        break;
      }
      if (!plain_error_) return failed;  // out of time or memory, or a crash: no other tier
      if (own_error_) return own_error_ends_build(std::move(failed));
      if (tier.kernels == TorchHeaders::kLean) ++c_.lean_header_fallbacks_;
      if (tier.kernels != TorchHeaders::kFull) {
        DICE_LOG(Debug) << tier.name << " headers failed; retrying with heavier ones"
                        << kv("hash", hash_);
      }
    }
    if (!failed) failed = link_module();
    return failed;
  }

  // Hands the build back to the worker's uid before it becomes visible (candidates run as the
  // sandbox uid and must not be able to rewrite any cached module), then renames it into the
  // cache.
  CompileOutcome publish() {
    out_.failure = FC::NONE;  // fail() recorded the failed attempts' errors
    out_.log_excerpt.clear();
    std::error_code ec;
    fs::remove(build_dir_ + "/kernels.o", ec);
    fs::remove(build_dir_ + "/binding.o", ec);
    const std::int64_t bytes = folder_bytes(build_dir_);
    if (bytes > (c_.options_.max_module_mb << 20)) {
      return module_too_large("the built module and its sources take " +
                              std::to_string(bytes >> 20) + " MiB,");
    }
    if (geteuid() == 0 && build_uid_ >= 0) {
      for (auto& entry : fs::recursive_directory_iterator(build_dir_, ec)) {
        if (lchown(entry.path().c_str(), 0, 0) != 0) break;
      }
      if (chown(build_dir_.c_str(), 0, 0) != 0) {
        return fail(FC::INTERNAL_ERROR, "cannot chown " + build_dir_);
      }
    }
    fs::permissions(build_dir_,
                    fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                        fs::perms::others_read | fs::perms::others_exec,
                    ec);
    const std::string final_dir = c_.options_.cache_dir + "/" + hash_;
    fs::rename(build_dir_, final_dir, ec);
    if (ec && !fs::exists(final_dir + "/" + module_name_)) {
      return fail(FC::INTERNAL_ERROR,
                  "cannot move " + build_dir_ + " to " + final_dir + ": " + ec.message());
    }
    touch_cache_entry(final_dir);  // its first use (compile_cache.h)
    out_.module_path = final_dir + "/" + module_name_;
    out_.seconds = seconds_since(start_);
    DICE_LOG(Info) << "compiled extension" << kv("name", ext_.name) << kv("hash", hash_)
                   << kv("seconds", out_.seconds);
    return out_;
  }

  Compiler& c_;
  const ExtensionSources& ext_;
  const std::string& hash_;
  CompileBudget& budget_;
  const SteadyClock::time_point start_;
  CompileOutcome out_;
  std::string module_name_;
  MemoryBudget::Reservation memory_;  // held until the build ends
  std::optional<SandboxUid> uid_lease_;
  int build_uid_ = -1;
  std::string build_dir_;
  FolderCleanup cleanup_;  // after the rename there is nothing left to remove
  std::vector<std::string> nvcc_, cxx_;
  SandboxSpec base_;
  std::optional<Result<SplitSources>> split_;
  bool split_applies_ = false;
  bool split_failed_ = false;  // the split build applied and failed with a plain error
  bool aten_ = false;
  std::map<TorchHeaders, std::string> preludes_;
  CompileLogPolicy log_policy_;
  // Whether the last failure was a plain compile error (compile_log.h: CompilerFailure), the only
  // kind a later tier may still turn into a build.
  bool plain_error_ = false;
  // Whether that plain error was read as the candidate's own (compile_diagnostics.h): then no
  // later tier is tried.
  bool own_error_ = false;
  // Which unit that plain compile error was in, as the order that starts with it; none after a
  // link or before any compile.
  std::optional<UnitOrder> failed_unit_;
};

CompileOutcome Compiler::build(const ExtensionSources& ext, const std::string& hash,
                               CompileBudget& budget) {
  return Build(*this, ext, hash, budget).run();
}

}  // namespace dice
