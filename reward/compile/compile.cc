#include "reward/compile/compile.h"

#include <unistd.h>

#include <cctype>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>

#include "common/disk_space.h"
#include "common/hash/content_hash.h"
#include "common/json/fields.h"
#include "common/log.h"
#include "common/seconds_since.h"
#include "reward/compile/compile_cache.h"
#include "reward/compile/split_sources.h"

namespace dice {
namespace {

namespace fs = std::filesystem;

// Part of the cache key of split builds (a module built another way is another module): bindings
// with kAten's headers first ("split-v1" was the scheme of bindings with kSlim's headers only).
constexpr char kSplitAtenScheme[] = "split-v2-aten";

std::string join(const std::vector<std::string>& parts, const std::string& sep) {
  std::string out;
  for (const auto& p : parts) out += (out.empty() ? "" : sep) + p;
  return out;
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
  DICE_ASSIGN_OR_RETURN(const boost::json::value root,
                        parse_json(run.stdout_text, "extract_sources.py output"));
  if (!json_bool(root, "ok")) {
    return Status::invalid_argument("load_inline sources: " + json_string(root, "error"));
  }
  std::vector<ExtensionSources> out;
  const boost::json::value* list = json_member(root, "extensions");
  if (list == nullptr || !list->is_array()) {
    return Status::corruption("extract_sources.py output: no extensions list");
  }
  for (const auto& e : list->get_array()) {
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
  if (memory_.total_mb() <
      build_reservation_mb(options_.build_memory_mb, options_.memory_limit_mb)) {
    DICE_LOG(Warn) << "compile memory budget below one build's reservation: builds run one at a "
                      "time, and may still exceed it"
                   << kv("memory_budget_mb", memory_.total_mb())
                   << kv("build_memory_mb", options_.build_memory_mb);
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
  aten_operators_ = per_operator_headers(toolchain_.include_paths);
  binding_flags_ = {"-fPIC", "-std=c++17", kBindingOptimization, "-DTORCH_API_INCLUDE_EXTENSION_H"};
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
  auto names = std::async(std::launch::async, [this] { header_names(); });
  if (!binding_pch_) return 0;  // (`names` waits for its reading as it goes out of scope)
  std::vector<TorchHeaders> variants = {TorchHeaders::kSlim};
  if (options_.split_host_device) variants.push_back(TorchHeaders::kAten);
  std::vector<std::future<bool>> builds;
  for (TorchHeaders headers : variants) {
    builds.push_back(std::async(std::launch::async, [this, headers] {
      // One compiler, of the binding headers only: within one build's reservation.
      Result<MemoryBudget::Reservation> memory =
          memory_.reserve(build_reservation_mb(options_.build_memory_mb, options_.memory_limit_mb),
                          options_.timeout_seconds);
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

namespace {

// g++ -M of the full binding prelude (<torch/extension.h>) in the compilers' sandbox: the system
// and C++ library headers torch pulls in; with every file under the toolchain's include folders,
// what HeaderNames reads. None where any of it could not be read: a name missing because its
// header was not read would decide wrongly.
std::shared_ptr<const HeaderNames> list_header_names(const Toolchain& toolchain,
                                                     const std::vector<std::string>& flags,
                                                     SandboxSpec spec) {
  const auto start = std::chrono::steady_clock::now();
  spec.files = {{"probe.cpp", binding_prelude(TorchHeaders::kFull)}};
  spec.workdir.clear();
  spec.argv = {toolchain.cxx, "-M", "probe.cpp"};
  spec.argv.insert(spec.argv.end(), flags.begin(), flags.end());
  Result<SandboxResult> run = run_sandboxed(spec);
  if (!run.ok() || !run->succeeded()) {
    DICE_LOG(Warn) << "cannot list the full headers; undeclared names retry with them"
                   << kv("why", run.ok() ? describe_sandbox_result(run.value()) + ": " +
                                               run->stderr_text.substr(0, 400)
                                         : run.status().message());
    return nullptr;
  }
  std::vector<std::string> files;
  for (auto& file : make_rule_prerequisites(run->stdout_text)) {
    if (!file.empty() && file[0] == '/') files.push_back(std::move(file));  // not probe.cpp
  }
  auto names =
      std::make_shared<const HeaderNames>(HeaderNames::read(toolchain.include_paths, files));
  if (names->unread() > 0 || files.empty()) {
    DICE_LOG(Warn) << "full headers not all readable; undeclared names retry with them"
                   << kv("unread", names->unread()) << kv("listed", files.size());
    return nullptr;
  }
  DICE_LOG(Info) << "read the names the full headers could declare" << kv("names", names->names())
                 << kv("files", names->files()) << kv("seconds", seconds_since(start));
  return names;
}

}  // namespace

const HeaderNames* Compiler::header_names() {
  std::call_once(header_names_once_, [this] {
    // Once per toolchain and flags in a process: tests and benches make many compilers.
    static std::mutex shared_mu;
    static std::map<std::string, std::shared_ptr<const HeaderNames>> shared;
    std::string key = toolchain_.identity();
    for (const auto& f : binding_flags_) key += "\n" + f;
    std::lock_guard<std::mutex> lock(shared_mu);
    auto it = shared.find(key);
    if (it == shared.end()) {
      std::optional<SandboxUid> uid_lease;
      const int uid = compiler_uid(options_.uid, &uid_lease);
      it = shared.emplace(key, list_header_names(toolchain_, binding_flags_, compiler_sandbox(uid)))
               .first;
    }
    header_names_ = it->second;
  });
  return header_names_.get();
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
  if (options.optimization != kBindingOptimization) {
    optimization += std::string(" binding ") + kBindingOptimization;
  }
  return extension_hash(ext, toolchain, optimization,
                        options.split_host_device ? kSplitAtenScheme : "");
}

std::shared_future<CompileOutcome> Compiler::submit(const ExtensionSources& ext,
                                                    std::shared_ptr<CompileBudget> budget) {
  const std::string hash = extension_hash(ext, toolchain_, options_);
  std::error_code ec;
  // Touched first (compile_cache.h): an entry being evicted is then either taken back, or gone
  // and built again.
  if (touch_cache_entry(options_.cache_dir + "/" + hash) &&
      fs::exists(module_file(hash, ext.name), ec)) {
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
    CompileOutcome outcome;
    const Status room = make_room();
    if (room.ok()) {
      outcome = build(job.ext, job.hash, *job.budget);
    } else {
      // The disk is ours to keep, not the candidate's: a compiler that met it full would fail
      // as if the code were wrong.
      outcome.source_hash = job.hash;
      outcome.module_name = job.ext.name;
      outcome.failure = schema::FailureClass::INTERNAL_ERROR;
      outcome.log_excerpt = "not built: " + room.message();
      DICE_LOG(Error) << "compile cache's disk is full: build not started"
                      << kv("why", room.message());
    }
    if (outcome.failure == schema::FailureClass::NONE) evict_over_budget();
    {
      std::lock_guard<std::mutex> lock(mu_);
      in_flight_.erase(job.hash);
    }
    job.promise.set_value(std::move(outcome));
  }
}

Status Compiler::make_room() {
  if (options_.cache_min_free_mb <= 0) return Status::ok_status();
  CacheEvictionOptions o;
  o.budget_bytes = options_.cache_budget_mb << 20;
  o.keep_seconds = options_.cache_keep_seconds;
  o.min_free_bytes = options_.cache_min_free_mb << 20;
  const std::int64_t build_bytes = 2 * (options_.max_module_mb << 20);
  // The common case, room enough, costs one statvfs; only a short disk pays for an eviction pass,
  // after which the same check says whether the build may start (naming this floor).
  const auto check = [&] {
    return check_free_disk_space(options_.cache_dir, static_cast<std::uint64_t>(build_bytes),
                                 "a build in the compile cache",
                                 {static_cast<std::uint64_t>(o.min_free_bytes), nullptr,
                                  "CompileOptions::cache_min_free_mb"});
  };
  if (check().ok()) return Status::ok_status();
  std::lock_guard<std::mutex> lock(eviction_mu_);
  (void)make_room_for_build(options_.cache_dir, build_bytes, o);
  return check();
}

void Compiler::evict_over_budget() {
  if (options_.cache_budget_mb <= 0) return;
  std::unique_lock<std::mutex> lock(eviction_mu_, std::try_to_lock);
  if (!lock.owns_lock()) return;  // a pass is running: it sees this build's entry too
  CacheEvictionOptions o;
  o.budget_bytes = options_.cache_budget_mb << 20;
  o.keep_seconds = options_.cache_keep_seconds;
  const CacheEviction done = evict_cache_entries(options_.cache_dir, o);
  if (done.entries_removed > 0) {
    DICE_LOG(Info) << "compile cache over its budget: least recently used entries removed"
                   << kv("removed", done.entries_removed)
                   << kv("mb_before", done.bytes_before >> 20)
                   << kv("mb_after", done.bytes_after >> 20)
                   << kv("budget_mb", options_.cache_budget_mb);
  }
  if (done.over_budget) {
    DICE_LOG(Warn) << "compile cache over its budget with entries used within "
                      "cache_keep_seconds only: kept"
                   << kv("mb", done.bytes_after >> 20) << kv("budget_mb", options_.cache_budget_mb)
                   << kv("keep_seconds", options_.cache_keep_seconds);
  }
}

int Compiler::compiler_uid(int configured, std::optional<SandboxUid>* lease) {
  if (configured != kUniqueSandboxUid) return configured;
  if (geteuid() != 0) return -1;
  lease->emplace();
  return (*lease)->uid();
}

}  // namespace dice
