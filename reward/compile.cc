#include "reward/compile.h"

#include <unistd.h>

#include <cctype>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>

#include "common/hash/content_hash.h"
#include "common/log.h"
#include "common/seconds_since.h"
#include "reward/json_value.h"
#include "reward/split_sources.h"

namespace dice {
namespace {

namespace fs = std::filesystem;

// The uid compilers run as, from CompileOptions::uid: kUniqueSandboxUid leases one into `lease`
// when root (as another user, compilers run as that user: -1).
int compiler_uid(int configured, std::optional<SandboxUid>* lease) {
  if (configured != kUniqueSandboxUid) return configured;
  if (geteuid() != 0) return -1;
  lease->emplace();
  return (*lease)->uid();
}

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

// Part of the cache key of split builds (a module built another way is another module):
// bindings with kSlim's headers, or kAten's first (CompileOptions::aten_binding_headers).
constexpr char kSplitScheme[] = "split-v1";
constexpr char kSplitAtenScheme[] = "split-v2-aten";

bool is_identifier(const std::string& s) {
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) return false;
  for (char c : s) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
  }
  return true;
}

std::string join(const std::vector<std::string>& parts, const std::string& sep) {
  std::string out;
  for (const auto& p : parts) out += (out.empty() ? "" : sep) + p;
  return out;
}

Status write_file(const std::string& path, const std::string& contents) {
  std::ofstream out(path, std::ios::binary);
  out << contents;
  out.close();
  if (!out) return Status::io_error("cannot write " + path);
  return Status::ok_status();
}

}  // namespace

Result<std::vector<ExtensionSources>> extract_extension_sources(const std::string& candidate_source,
                                                                const std::string& python,
                                                                const std::string& script_dir,
                                                                const SandboxSpec& sandbox) {
  SandboxSpec spec = parser_sandbox(sandbox);
  DICE_ASSIGN_OR_RETURN(
      spec.files, read_files_for_sandbox(script_dir, {"extract_sources.py", "candidate_ast.py"}));
  spec.files.emplace_back("candidate.py", candidate_source);
  spec.argv = {python, "-E", "-s", "extract_sources.py", "candidate.py"};
  DICE_ASSIGN_OR_RETURN(SandboxResult run, run_sandboxed(spec));
  if (!run.succeeded()) {
    return Status::internal("extract_sources.py failed (" + describe_sandbox_result(run) +
                            "): " + run.stderr_text.substr(0, 2000));
  }
  DICE_ASSIGN_OR_RETURN(JsonDocument doc,
                        JsonDocument::parse(run.stdout_text, "extract_sources.py output"));
  auto root = doc.root();
  if (!json_bool(root, "ok")) {
    return Status::invalid_argument("load_inline sources: " + json_string(root, "error"));
  }
  std::vector<ExtensionSources> out;
  capnp::json::Value::Reader list;
  if (!json_member(root, "extensions", &list) || !list.isArray()) {
    return Status::corruption("extract_sources.py output: no extensions list");
  }
  for (auto e : list.getArray()) {
    ExtensionSources ext;
    ext.name = json_string(e, "name");
    ext.cpp_sources = json_string(e, "cpp_sources");
    ext.cuda_sources = json_string(e, "cuda_sources");
    ext.functions = json_strings(e, "functions");
    ext.extra_cuda_cflags = json_strings(e, "extra_cuda_cflags");
    ext.extra_cflags = json_strings(e, "extra_cflags");
    ext.extra_ldflags = json_strings(e, "extra_ldflags");
    out.push_back(std::move(ext));
  }
  return out;
}

std::string extension_hash(const ExtensionSources& ext, const Toolchain& toolchain,
                           const std::string& optimization, const std::string& scheme) {
  std::string source = content_hash_hex_parts(
      {ext.name, ext.cpp_sources, ext.cuda_sources, join(ext.functions, ",")});
  std::string flags = optimization + "|" + join(ext.extra_cuda_cflags, " ") + "|" +
                      join(ext.extra_cflags, " ") + "|" + join(ext.extra_ldflags, " ");
  if (!scheme.empty()) flags += "|" + scheme;
  return kernel_source_hash(source, flags, toolchain.identity());
}

Compiler::Compiler(Toolchain toolchain, CompileOptions options)
    : toolchain_(std::move(toolchain)),
      options_(std::move(options)),
      memory_(options_.memory_budget_mb > 0 ? options_.memory_budget_mb
                                            : default_compile_memory_mb()) {
  if (memory_.total_mb() < 2 * options_.memory_limit_mb) {
    DICE_LOG(Warn) << "compile memory budget below one build's two compilers: builds run one at a "
                      "time, and may still exceed it"
                   << kv("memory_budget_mb", memory_.total_mb())
                   << kv("memory_limit_mb", options_.memory_limit_mb);
  }
  // Headers every candidate may see (compile_log.h): torch's and Python's, CUDA's (nvcc's
  // folder's parent), the system's and gcc's own.
  public_include_roots_ = toolchain_.include_paths;
  if (const fs::path nvcc(toolchain_.nvcc); nvcc.is_absolute()) {
    public_include_roots_.push_back(nvcc.parent_path().parent_path().string());
  }
  for (const char* root : {"/usr/include", "/usr/lib/gcc", "/usr/local/include"}) {
    public_include_roots_.emplace_back(root);
  }
  std::error_code ec;
  // Absolute: nvcc and the evaluator run in other working directories (a relative cache path
  // made every compile fail with "Could not open output file").
  const fs::path absolute = fs::absolute(options_.cache_dir, ec);
  if (!ec) options_.cache_dir = absolute.lexically_normal().string();
  fs::create_directories(options_.cache_dir, ec);
  // The unprivileged compilers create their build folders here.
  fs::permissions(options_.cache_dir,
                  fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                      fs::perms::others_read | fs::perms::others_exec,
                  ec);
  if (options_.lean_kernel_headers)
    aten_operators_ = per_operator_headers(toolchain_.include_paths);
  binding_flags_ = {"-fPIC", "-std=c++17", options_.binding_optimization,
                    "-DTORCH_API_INCLUDE_EXTENSION_H"};
  binding_flags_.insert(binding_flags_.end(), toolchain_.defines.begin(), toolchain_.defines.end());
  for (const auto& dir : toolchain_.include_paths) binding_flags_.push_back("-I" + dir);
  if (options_.precompiled_binding_prelude) {
    binding_pch_ = std::make_unique<BindingPch>(options_.cache_dir, toolchain_.cxx, binding_flags_,
                                                toolchain_.identity());
  }
  for (int i = 0; i < std::max(1, options_.jobs); ++i) {
    workers_.emplace_back([this] { worker_loop(); });
  }
}

Compiler::~Compiler() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    closed_ = true;
  }
  cv_.notify_all();
  memory_.close();  // builds waiting for memory end now
  for (auto& t : workers_) t.join();
  for (auto& job : queue_) {
    CompileOutcome out;
    out.failure = schema::FailureClass::INTERNAL_ERROR;
    out.log_excerpt = "compiler shut down before the build started";
    job.promise.set_value(out);
  }
}

SandboxSpec Compiler::compiler_sandbox(int uid) const {
  SandboxSpec spec;
  spec.timeout_seconds = options_.timeout_seconds;
  spec.memory_limit_mb = options_.memory_limit_mb;
  spec.cpu_time_seconds = static_cast<int>(options_.timeout_seconds) + 10;
  spec.max_processes = 256;
  spec.max_output_mb = 512;  // object files of big kernels
  spec.uid = uid;
  spec.gid = uid;
  // The toolchain read-only in the compiler's root; of the cache, only the build's own folder
  // (workdir) and the binding preludes (added where they are chosen), never other builds.
  spec.read_only_paths = options_.root_binds;
  for (const auto* dirs : {&toolchain_.include_paths, &toolchain_.library_paths}) {
    for (const auto& dir : *dirs) {
      std::error_code ec;
      if (fs::exists(dir, ec)) spec.read_only_paths.push_back(dir);
    }
  }
  spec.cgroups = options_.cgroups;
  return spec;
}

int Compiler::prepare_binding_headers() {
  if (!binding_pch_) return 0;
  std::vector<TorchHeaders> variants = {TorchHeaders::kSlim};
  if (options_.split_host_device && options_.aten_binding_headers) {
    variants.push_back(TorchHeaders::kAten);
  }
  std::vector<std::future<bool>> builds;
  for (TorchHeaders headers : variants) {
    builds.push_back(std::async(std::launch::async, [this, headers] {
      // One compiler: one limit's worth of the memory budget.
      Result<MemoryBudget::Reservation> memory =
          memory_.reserve(options_.memory_limit_mb, options_.timeout_seconds);
      if (!memory.ok()) return false;
      std::optional<SandboxUid> uid_lease;
      const int uid = compiler_uid(options_.uid, &uid_lease);
      return !binding_pch_->header_for(headers, compiler_sandbox(uid)).empty();
    }));
  }
  int ready = 0;
  for (auto& b : builds) ready += b.get() ? 1 : 0;
  return ready;
}

size_t Compiler::queue_depth() const {
  std::lock_guard<std::mutex> lock(mu_);
  return queue_.size();
}

std::string Compiler::module_file(const std::string& hash, const std::string& name) const {
  return options_.cache_dir + "/" + hash + "/" + name + toolchain_.ext_suffix;
}

std::string extension_hash(const ExtensionSources& ext, const Toolchain& toolchain,
                           const CompileOptions& options) {
  // The binding's flag only where it differs from nvcc's, so keys from before it had its own
  // stay what they were.
  std::string optimization = options.optimization;
  if (options.binding_optimization != options.optimization) {
    optimization += " binding " + options.binding_optimization;
  }
  const char* scheme = !options.split_host_device     ? ""
                       : options.aten_binding_headers ? kSplitAtenScheme
                                                      : kSplitScheme;
  return extension_hash(ext, toolchain, optimization, scheme);
}

std::shared_future<CompileOutcome> Compiler::submit(const ExtensionSources& ext,
                                                    std::shared_ptr<CompileBudget> budget) {
  const std::string hash = extension_hash(ext, toolchain_, options_);
  std::error_code ec;
  if (fs::exists(module_file(hash, ext.name), ec)) {
    CompileOutcome hit;
    hit.source_hash = hash;
    hit.module_name = ext.name;
    hit.module_path = module_file(hash, ext.name);
    hit.cache_hit = true;
    std::promise<CompileOutcome> ready;
    ready.set_value(hit);
    return ready.get_future().share();
  }
  std::lock_guard<std::mutex> lock(mu_);
  auto it = in_flight_.find(hash);
  if (it != in_flight_.end()) return it->second;
  if (!budget) budget = std::make_shared<CompileBudget>(options_.timeout_seconds);
  Job job{ext, hash, std::move(budget), {}};
  std::shared_future<CompileOutcome> future = job.promise.get_future().share();
  in_flight_[hash] = future;
  queue_.push_back(std::move(job));
  cv_.notify_one();
  return future;
}

void Compiler::worker_loop() {
  for (;;) {
    Job job;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [this] { return closed_ || !queue_.empty(); });
      if (closed_) return;
      job = std::move(queue_.front());
      queue_.pop_front();
    }
    CompileOutcome outcome = build(job.ext, job.hash, *job.budget);
    {
      std::lock_guard<std::mutex> lock(mu_);
      in_flight_.erase(job.hash);
    }
    job.promise.set_value(std::move(outcome));
  }
}

CompileOutcome Compiler::build(const ExtensionSources& ext, const std::string& hash,
                               CompileBudget& budget) {
  const auto start = std::chrono::steady_clock::now();
  CompileOutcome out;
  out.source_hash = hash;
  out.module_name = ext.name;
  auto fail = [&](schema::FailureClass kind, std::string excerpt) {
    out.failure = kind;
    out.log_excerpt = std::move(excerpt);
    out.seconds = seconds_since(start);
    return out;
  };
  if (!is_identifier(ext.name)) {
    return fail(schema::FailureClass::COMPILE_ERROR, "extension name is not an identifier");
  }
  for (const auto& f : ext.functions) {
    if (!is_identifier(f)) {
      return fail(schema::FailureClass::COMPILE_ERROR, "function " + f + " is not an identifier");
    }
  }
  // Memory for both compilers before anything runs (compile_limits.h). The wait is bounded: each
  // build holding memory ends within its budget, and at most the other jobs' builds and the two
  // prelude builds are ahead of this one.
  const double memory_wait_limit = options_.timeout_seconds * (std::max(1, options_.jobs) + 2);
  Result<MemoryBudget::Reservation> memory =
      memory_.reserve(2 * options_.memory_limit_mb, memory_wait_limit);
  out.memory_wait_seconds = seconds_since(start);
  if (!memory.ok()) {
    return fail(schema::FailureClass::INTERNAL_ERROR,
                "compile memory: " + memory.status().message());
  }
  if (out.memory_wait_seconds > 1) {
    DICE_LOG(Info) << "build waited for compile memory" << kv("hash", hash)
                   << kv("seconds", out.memory_wait_seconds) << kv("budget_mb", memory_.total_mb());
  }

  // One uid for the whole build (both compilers and the link write the same folder).
  std::optional<SandboxUid> uid_lease;
  const int build_uid = compiler_uid(options_.uid, &uid_lease);
  std::string build_dir;
  {
    std::lock_guard<std::mutex> lock(mu_);
    build_dir = options_.cache_dir + "/" + hash + ".build-" + std::to_string(getpid()) + "-" +
                std::to_string(build_counter_++);
  }
  std::error_code ec;
  fs::remove_all(build_dir, ec);
  fs::create_directories(build_dir, ec);
  if (ec) return fail(schema::FailureClass::INTERNAL_ERROR, "cannot create " + build_dir);
  struct Cleanup {
    std::string dir;
    ~Cleanup() {
      std::error_code e;
      fs::remove_all(dir, e);
    }
  } cleanup{build_dir};
  const std::string name_define = "-DTORCH_EXTENSION_NAME=" + ext.name;
  std::vector<std::string> includes;
  for (const auto& dir : toolchain_.include_paths) includes.push_back("-I" + dir);

  std::vector<std::string> nvcc = {toolchain_.nvcc,
                                   "-c",
                                   "kernels.cu",
                                   "-o",
                                   "kernels.o",
                                   name_define,
                                   "-DTORCH_API_INCLUDE_EXTENSION_H",
                                   toolchain_.defines[0],
                                   options_.optimization};
  nvcc.insert(nvcc.end(), kNvccBaseFlags.begin(), kNvccBaseFlags.end());
  const std::string arch_num = toolchain_.arch.substr(3);
  nvcc.push_back("-gencode=arch=compute_" + arch_num + ",code=sm_" + arch_num);
  nvcc.insert(nvcc.end(), includes.begin(), includes.end());
  nvcc.insert(nvcc.end(), ext.extra_cuda_cflags.begin(), ext.extra_cuda_cflags.end());

  std::vector<std::string> cxx = {toolchain_.cxx, "-c", "binding.cpp", "-o", "binding.o"};
  cxx.insert(cxx.end(), binding_flags_.begin(), binding_flags_.end());
  cxx.push_back(name_define);
  cxx.insert(cxx.end(), ext.extra_cflags.begin(), ext.extra_cflags.end());

  SandboxSpec base = compiler_sandbox(build_uid);
  base.workdir = build_dir;

  // Before the candidate's clock starts: the split (pure text work) and the binding preludes it
  // needs (a prelude's one-off build is the service's cost, not the candidate's).
  std::optional<Result<SplitSources>> split;
  if (options_.split_host_device) split.emplace(split_host_device(ext));
  const bool split_applies = split && split->ok();
  const bool aten = split_applies && options_.aten_binding_headers &&
                    aten_binding_applies(ext.cpp_sources, split->value().host_part);
  // The precompiled prelude only where the flags are the shared ones (a candidate's own
  // extra_cflags would make g++ ignore it anyway).
  std::map<TorchHeaders, std::string> preludes;
  if (binding_pch_ && ext.extra_cflags.empty()) {
    preludes[TorchHeaders::kSlim] = binding_pch_->header_for(TorchHeaders::kSlim, base);
    if (aten) preludes[TorchHeaders::kAten] = binding_pch_->header_for(TorchHeaders::kAten, base);
  }
  for (const auto& [headers, prelude] : preludes) {
    if (!prelude.empty()) base.read_only_paths.push_back(fs::path(prelude).parent_path().string());
  }
  budget.start();
  CompileLogPolicy log_policy;
  log_policy.build_dir = build_dir;
  log_policy.public_roots = public_include_roots_;
  // Whether the last failure was a plain compile error (compile_log.h: CompilerFailure), the only
  // kind a later tier may still turn into a build.
  bool plain_error = false;
  // The budget left for the next compiler process, or a COMPILE_TIMEOUT outcome when none is.
  auto budget_left = [&](double* seconds) -> std::optional<CompileOutcome> {
    *seconds = budget.seconds_left();
    if (*seconds > 0) return std::nullopt;
    plain_error = false;
    std::string tried;
    for (const auto& t : out.tiers) tried += (tried.empty() ? "" : ", ") + t;
    return fail(schema::FailureClass::COMPILE_TIMEOUT,
                "compile budget of " + std::to_string(static_cast<int>(budget.seconds())) +
                    " s spent (tiers tried: " + (tried.empty() ? "none" : tried) + ")");
  };
  // A compiler's failed run as the build's outcome (`which` names the compiler for the excerpt).
  auto compiler_failed = [&](const SandboxResult& r, const std::string& which) {
    const CompilerFailure why = classify_compiler_failure(r);
    plain_error = why.plain_error;
    if (why.failure == schema::FailureClass::COMPILE_TIMEOUT) {
      return fail(why.failure, "compile budget of " +
                                   std::to_string(static_cast<int>(budget.seconds())) +
                                   " s ran out in tier " + out.tiers.back() + " (" + which +
                                   describe_sandbox_result(r) + ")");
    }
    if (why.failure == schema::FailureClass::SANDBOX_UNAVAILABLE) {
      return fail(why.failure, which + "not run: " + r.unavailable_reason);
    }
    const std::string how =
        why.plain_error ? "" : "(" + describe_sandbox_result(r) + ", not retried) ";
    return fail(why.failure, which + how +
                                 compiler_log_excerpt(r.stderr_text + r.stdout_text, log_policy,
                                                      options_.error_lines));
  };

  // Both translation units with one header set (or split: the kernels without torch, the host
  // code in the binding file); the binding file and the CUDA file compile at the same time. With
  // `binding_only` only the binding file compiles (kernels.o is there from a call before). An
  // error result is the first failure, ready to return; `binding_failed` says whether it was the
  // binding's compile error (the .cu compiled).
  auto compile_objects = [&](const char* tier, TorchHeaders headers, const SplitSources* split,
                             TorchHeaders binding_headers, bool binding_only,
                             bool* binding_failed) -> std::optional<CompileOutcome> {
    if (binding_failed != nullptr) *binding_failed = false;
    plain_error = false;  // until a compiler says so: the service's own failures end the build
    double seconds_left = 0;
    if (auto spent = budget_left(&seconds_left)) return spent;
    out.tiers.emplace_back(tier);
    const auto prelude_it = preludes.find(binding_headers);
    const std::string prelude = prelude_it == preludes.end() ? "" : prelude_it->second;
    Status written = binding_only
                         ? Status::ok_status()
                         : write_file(build_dir + "/kernels.cu",
                                      split ? split->device_unit
                                            : cuda_translation_unit(ext, headers, aten_operators_));
    if (written.ok()) {
      written = write_file(
          build_dir + "/binding.cpp",
          binding_translation_unit(ext, binding_headers, prelude, split ? split->host_part : ""));
    }
    if (!written.ok()) return fail(schema::FailureClass::INTERNAL_ERROR, written.message());
    if (geteuid() == 0 && build_uid >= 0) {
      for (const auto& p : {build_dir, build_dir + "/kernels.cu", build_dir + "/binding.cpp"}) {
        if (chown(p.c_str(), build_uid, build_uid) != 0) {
          return fail(schema::FailureClass::INTERNAL_ERROR, "cannot chown " + p);
        }
      }
    }
    SandboxSpec nvcc_spec = base;
    nvcc_spec.argv = nvcc;
    SandboxSpec cxx_spec = base;
    cxx_spec.argv = cxx;
    for (SandboxSpec* spec : {&nvcc_spec, &cxx_spec}) {
      spec->timeout_seconds = std::min(spec->timeout_seconds, seconds_left);
    }
    auto cxx_future = std::async(std::launch::async, [&] { return run_sandboxed(cxx_spec); });
    std::optional<Result<SandboxResult>> nvcc_run;  // none when binding_only: kernels.o is there
    if (!binding_only) nvcc_run = run_sandboxed(nvcc_spec);
    Result<SandboxResult> cxx_run = cxx_future.get();
    const Result<SandboxResult>* plain = nullptr;  // the first plain compile error
    for (const auto* run : {nvcc_run ? &*nvcc_run : nullptr, &cxx_run}) {
      if (run == nullptr) continue;
      if (!run->ok()) return fail(schema::FailureClass::INTERNAL_ERROR, run->status().message());
      if (run->value().succeeded()) continue;
      const std::string which = run == &cxx_run ? "c++ (cpp_sources): " : "nvcc (cuda_sources): ";
      // A timeout, the memory or a crash of either compiler ends the build, even where the other
      // one only had a plain error.
      if (!classify_compiler_failure(run->value()).plain_error) {
        return compiler_failed(run->value(), which);
      }
      if (plain == nullptr) plain = run;
    }
    if (plain == nullptr) return std::nullopt;
    if (binding_failed != nullptr) *binding_failed = plain == &cxx_run;
    return compiler_failed(plain->value(),
                           plain == &cxx_run ? "c++ (cpp_sources): " : "nvcc (cuda_sources): ");
  };
  const std::string module_name = ext.name + toolchain_.ext_suffix;
  auto link_module = [&]() -> std::optional<CompileOutcome> {
    plain_error = false;
    double seconds_left = 0;
    if (auto spent = budget_left(&seconds_left)) return spent;
    std::vector<std::string> link = {toolchain_.cxx, "-shared", "kernels.o",
                                     "binding.o",    "-o",      module_name};
    for (const auto& dir : toolchain_.library_paths) link.push_back("-L" + dir);
    for (const auto& lib : toolchain_.torch_libraries) link.push_back("-l" + lib);
    link.insert(link.end(), ext.extra_ldflags.begin(), ext.extra_ldflags.end());
    SandboxSpec link_spec = base;
    link_spec.argv = link;
    link_spec.timeout_seconds = std::min(link_spec.timeout_seconds, seconds_left);
    Result<SandboxResult> link_run = run_sandboxed(link_spec);
    if (!link_run.ok()) {
      return fail(schema::FailureClass::INTERNAL_ERROR, link_run.status().message());
    }
    if (!link_run->succeeded()) return compiler_failed(link_run.value(), "link: ");
    return std::nullopt;
  };
  // The split build first (split_sources.h: nvcc without torch headers): where it does not apply,
  // or does not compile or link, the build goes on as if it had not been tried, so its errors are
  // never the candidate's. Only a plain compile error goes on: a split build that ran out of time
  // or memory ends the build (compile_limits.h).
  bool linked = false;
  if (split) {
    std::optional<CompileOutcome> split_failed;
    if (split_applies) {
      bool binding_failed = false;
      split_failed =
          compile_objects("split", TorchHeaders::kSlim, &split->value(),
                          aten ? TorchHeaders::kAten : TorchHeaders::kSlim, false, &binding_failed);
      if (split_failed && aten && binding_failed && plain_error) {
        // The host code needs more of torch than kAten has: kSlim's binding, same kernels.o.
        DICE_LOG(Debug) << "binding failed with the ATen headers; retrying with the slim ones"
                        << kv("hash", hash);
        ++aten_binding_fallbacks_;
        split_failed = compile_objects("split-slim-binding", TorchHeaders::kSlim, &split->value(),
                                       TorchHeaders::kSlim, true, nullptr);
      }
      if (!split_failed) split_failed = link_module();
      if (split_failed && !plain_error) {
        return *split_failed;  // out of time or memory, or the service's own failure
      }
      linked = !split_failed;
    }
    if (!linked) {
      ++split_fallbacks_;
      DICE_LOG(Debug) << "split build not used; building with torch headers" << kv("hash", hash)
                      << kv("why", split_applies
                                       ? "it failed to build: " + split_failed->log_excerpt
                                       : split->status().message());
    }
  }
  // The leanest headers first (most kernels need nothing else); a plain compile error there may
  // only mean the source uses more of torch, so it gets the slim and then the full headers before
  // it counts as the candidate's.
  if (!linked) {
    std::optional<CompileOutcome> failed;
    if (options_.lean_kernel_headers && !aten_operators_.empty()) {
      // The binding file has no lean form (binding.h): kLean's is kSlim's.
      failed = compile_objects("lean", TorchHeaders::kLean, nullptr, TorchHeaders::kSlim, false,
                               nullptr);
      if (failed && plain_error) {
        DICE_LOG(Debug) << "lean headers failed; retrying with the slim ones" << kv("hash", hash);
        ++lean_header_fallbacks_;
        failed = compile_objects("slim", TorchHeaders::kSlim, nullptr, TorchHeaders::kSlim, false,
                                 nullptr);
      }
    } else {
      failed = compile_objects("slim", TorchHeaders::kSlim, nullptr, TorchHeaders::kSlim, false,
                               nullptr);
    }
    if (failed && plain_error) {
      DICE_LOG(Debug) << "slim headers failed; retrying with torch/extension.h" << kv("hash", hash);
      failed = compile_objects("full", TorchHeaders::kFull, nullptr, TorchHeaders::kFull, false,
                               nullptr);
      if (!failed) ++full_header_builds_;
    }
    if (!failed) failed = link_module();
    if (failed) return *failed;
  }
  out.failure = schema::FailureClass::NONE;  // fail() recorded the failed attempts' errors
  out.log_excerpt.clear();

  fs::remove(build_dir + "/kernels.o", ec);
  fs::remove(build_dir + "/binding.o", ec);
  // Hand the build back to the worker's uid before it becomes visible: candidates run as the
  // sandbox uid and must not be able to rewrite any cached module.
  if (geteuid() == 0 && build_uid >= 0) {
    for (auto& entry : fs::recursive_directory_iterator(build_dir, ec)) {
      if (lchown(entry.path().c_str(), 0, 0) != 0) break;
    }
    if (chown(build_dir.c_str(), 0, 0) != 0) {
      return fail(schema::FailureClass::INTERNAL_ERROR, "cannot chown " + build_dir);
    }
  }
  fs::permissions(build_dir,
                  fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                      fs::perms::others_read | fs::perms::others_exec,
                  ec);
  const std::string final_dir = options_.cache_dir + "/" + hash;
  fs::rename(build_dir, final_dir, ec);
  if (ec && !fs::exists(final_dir + "/" + module_name)) {
    return fail(schema::FailureClass::INTERNAL_ERROR,
                "cannot move " + build_dir + " to " + final_dir + ": " + ec.message());
  }
  out.module_path = final_dir + "/" + module_name;
  out.seconds = seconds_since(start);
  DICE_LOG(Info) << "compiled extension" << kv("name", ext.name) << kv("hash", hash)
                 << kv("seconds", out.seconds);
  return out;
}

}  // namespace dice
