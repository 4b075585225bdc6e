// split_compile_bench: the compile cost of the infilling dev items (kernel_infilling_dev.json)
// with and without the split build (reward/compile/split_sources.h), and which items the split
// takes.
//
//   split_compile_bench [--data FILE] [--ids 7498,6995,...] [--first N]
//                       [--modes classify,split,lean,full] [--python /usr/bin/python3]
//                       [--arch sm_90] [--cache DIR] [--import] [--dump DIR] [--keep] [--rss]
//                       [--budget SECONDS]
//
// classify: one line per item, "split" or the reason it does not apply (with --dump, each
// split's two files as DIR/<id>.kernels.cu and DIR/<id>.host.cpp). split / lean (the build as a
// worker does it, and without the split: CompileOptions::split_host_device off): each item
// built one at a time in a fresh cache folder (the binding's precompiled headers are made first,
// as a worker makes them when it starts), printing per item the wall seconds and the compilers'
// CPU seconds (children user + sys), then the totals. `--import` checks that each built module
// imports in --python (not timed). Modes run in the order given; alternate them
// (--modes split,lean,split,lean) to spread drift in the machine's load over both. The variants
// split-before, split-slim, split-O3, split-retry-errors and split-every-tier (builds before a
// change, recorded in docs/BENCHMARKS.md) went with the product options that only they set.
// `--keep` leaves each mode's cache folder (generated sources, modules, the binding PCH) in place
// for compiling by hand. full: lean's build with a guard after each item's cuda_sources that
// is an #error unless Python.h came before it (only the item's own #include of
// <torch/extension.h> brings it, which the light tiers blank), so the lean tier fails and the full
// tier builds: what a build with the full headers costs.
// `--rss` adds each build's peak resident memory ("peak_rss_mb"): every 20 ms the VmRSS of
// every process below this one (the sandboxes, nvcc and its stages, the host compiler, the
// linker) is summed, and the largest sum kept; pages shared between them count once per
// process, so it errs high (what CompileOptions::build_memory_mb is taken from). `--budget`
// sets each item's compile budget (CompileOptions::timeout_seconds; a loaded machine may need
// more than the default to finish a full-header build).
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "common/json/fields.h"
#include "common/remove_tree.h"
#include "reward/compile/compile.h"
#include "reward/compile/split_sources.h"

namespace {

namespace fs = std::filesystem;
using namespace dice;

struct Flags {
  std::string data = DICE_RL_DATA_DIR "/kernel_infilling_dev.json";
  std::vector<std::string> ids;  // empty = all (or --first)
  size_t first = 0;              // 0 = no limit
  std::vector<std::string> modes = {"classify"};
  std::string python = "/usr/bin/python3";
  std::string arch = "sm_90";
  std::string cache = "/tmp/split_compile_bench";
  bool check_import = false;
  bool keep = false;
  bool rss = false;  // sample each build's peak resident memory
  double budget_seconds = dice::CompileOptions().timeout_seconds;
  std::string dump;  // classify: where to write the split files; empty = nowhere
};

std::vector<std::string> split_list(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  for (std::string part; std::getline(ss, part, ',');) {
    if (!part.empty()) out.push_back(part);
  }
  return out;
}

bool parse(int argc, char** argv, Flags* f) {
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--import") {
      f->check_import = true;
      continue;
    }
    if (arg == "--keep") {
      f->keep = true;
      continue;
    }
    if (arg == "--rss") {
      f->rss = true;
      continue;
    }
    if (i + 1 >= argc) return false;
    const std::string value = argv[++i];
    if (arg == "--data")
      f->data = value;
    else if (arg == "--ids")
      f->ids = split_list(value);
    else if (arg == "--first")
      f->first = std::stoul(value);
    else if (arg == "--modes")
      f->modes = split_list(value);
    else if (arg == "--python")
      f->python = value;
    else if (arg == "--arch")
      f->arch = value;
    else if (arg == "--cache")
      f->cache = value;
    else if (arg == "--dump")
      f->dump = value;
    else if (arg == "--budget")
      f->budget_seconds = std::stod(value);
    else
      return false;
  }
  return true;
}

struct Item {
  std::string id;
  ExtensionSources ext;
};

Result<std::vector<Item>> load_items(const Flags& f) {
  std::ifstream in(f.data, std::ios::binary);
  if (!in) return Status::not_found("no dev data at " + f.data);
  std::stringstream ss;
  ss << in.rdbuf();
  DICE_ASSIGN_OR_RETURN(const boost::json::value doc, parse_json(ss.str(), f.data));
  if (!doc.is_array()) return Status::invalid_argument(f.data + ": not a JSON array of items");
  std::vector<Item> items;
  for (const auto& e : doc.get_array()) {
    Item item;
    item.id = json_id(e);
    if (!f.ids.empty() && std::find(f.ids.begin(), f.ids.end(), item.id) == f.ids.end()) continue;
    if (f.first != 0 && items.size() >= f.first) break;
    SandboxSpec spec;
    spec.timeout_seconds = 60;
    DICE_ASSIGN_OR_RETURN(std::vector<ExtensionSources> exts,
                          extract_extension_sources(json_string(e, "cuda_code"), f.python,
                                                    DICE_REWARD_PYTHON_DIR, spec));
    if (exts.size() != 1) return Status::invalid_argument(item.id + ": not one extension");
    item.ext = exts[0];
    items.push_back(std::move(item));
  }
  return items;
}

double children_cpu_seconds() {
  struct rusage ru;
  getrusage(RUSAGE_CHILDREN, &ru);
  return ru.ru_utime.tv_sec + ru.ru_stime.tv_sec +
         1e-6 * (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
}

// The 1, 5 and 15 minute load averages (the dev VM is shared: say how loaded it was).
std::string load_average() {
  std::ifstream in("/proc/loadavg");
  std::string one, five, fifteen;
  in >> one >> five >> fifteen;
  return one + " " + five + " " + fifteen;
}

// The summed VmRSS, KiB, of every process below `root` now (walks /proc: a process's parent is
// the PPid of its status file).
std::int64_t tree_rss_kib(pid_t root) {
  std::map<pid_t, std::vector<pid_t>> children;
  std::map<pid_t, std::int64_t> rss;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator("/proc", ec)) {
    const std::string name = entry.path().filename().string();
    if (name.empty() || !std::all_of(name.begin(), name.end(), ::isdigit)) continue;
    std::ifstream status(entry.path() / "status");
    pid_t ppid = -1;
    std::int64_t kib = 0;
    for (std::string line; std::getline(status, line);) {
      if (line.rfind("PPid:", 0) == 0) ppid = std::stoi(line.substr(5));
      if (line.rfind("VmRSS:", 0) == 0) kib = std::stoll(line.substr(6));
    }
    const pid_t pid = std::stoi(name);
    children[ppid].push_back(pid);
    rss[pid] = kib;
  }
  std::int64_t total = 0;
  std::vector<pid_t> open = children[root];
  while (!open.empty()) {
    const pid_t pid = open.back();
    open.pop_back();
    total += rss[pid];
    for (pid_t child : children[pid]) open.push_back(child);
  }
  return total;
}

// The largest tree_rss_kib(this process) seen while it lives, sampled every 20 ms.
class PeakTreeRss {
 public:
  PeakTreeRss() : sampler_([this] { sample(); }) {}
  ~PeakTreeRss() {
    done_ = true;
    sampler_.join();
  }
  double mb() const { return peak_kib_.load() / 1024.0; }

 private:
  void sample() {
    while (!done_) {
      const std::int64_t now = tree_rss_kib(getpid());
      if (now > peak_kib_) peak_kib_ = now;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
  std::atomic<bool> done_{false};
  std::atomic<std::int64_t> peak_kib_{0};
  std::thread sampler_;
};

// full mode's guard: an #error in every tier that blanks the item's <torch/extension.h>
// (compile_diagnostics.h retries an error under a macro the candidate does not define, so the full
// tier decides).
constexpr char kFullHeadersOnly[] =
    "\n#ifndef PY_VERSION\n#error split_compile_bench full: full headers only\n#endif\n";

bool imports(const Flags& f, const CompileOutcome& built) {
  const std::string dir = fs::path(built.module_path).parent_path().string();
  const std::string cmd = f.python + " -c 'import sys; sys.path.insert(0, \"" + dir +
                          "\"); import torch, " + built.module_name + "' > /dev/null 2>&1";
  return std::system(cmd.c_str()) == 0;
}

int build_all(const Flags& f, const Toolchain& toolchain, const std::vector<Item>& items,
              const std::string& mode) {
  CompileOptions o;
  o.cache_dir = f.cache + "/" + mode;
  o.jobs = 1;
  o.timeout_seconds = f.budget_seconds;
  o.split_host_device = mode == "split";
  const bool full_only = mode == "full";
  dice::remove_tree(o.cache_dir).ignore();
  Compiler compiler(toolchain, o);
  {
    // The binding's precompiled headers, as a long-running worker has them (not timed per item).
    const double cpu0 = children_cpu_seconds();
    const int ready = compiler.prepare_binding_headers();
    std::printf("{\"mode\": \"%s\", \"binding_headers_ready\": %d, \"cpu_s\": %.1f}\n",
                mode.c_str(), ready, children_cpu_seconds() - cpu0);
  }
  const std::uint64_t fallbacks0 = compiler.split_fallbacks();
  const std::uint64_t aten0 = compiler.aten_binding_fallbacks();
  double total_cpu = 0, total_wall = 0;
  int failures = 0;
  for (const auto& item : items) {
    const double cpu0 = children_cpu_seconds();
    const std::uint64_t item_fallbacks0 = compiler.split_fallbacks();
    const std::uint64_t item_aten0 = compiler.aten_binding_fallbacks();
    ExtensionSources ext = item.ext;
    if (full_only) ext.cuda_sources += kFullHeadersOnly;
    const auto t0 = std::chrono::steady_clock::now();
    double peak_rss_mb = -1;
    CompileOutcome out;
    if (f.rss) {
      PeakTreeRss peak;
      out = compiler.compile(ext);
      peak_rss_mb = peak.mb();
    } else {
      out = compiler.compile(ext);
    }
    const double wall =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const double cpu = children_cpu_seconds() - cpu0;
    total_cpu += cpu;
    total_wall += wall;
    const bool ok = out.failure == schema::FailureClass::NONE;
    failures += !ok;
    std::string imported = "null";
    if (ok && f.check_import) imported = imports(f, out) ? "true" : "false";
    const bool split = o.split_host_device && compiler.split_fallbacks() == item_fallbacks0;
    std::string tiers;
    for (const auto& t : out.tiers) tiers += (tiers.empty() ? "\"" : ", \"") + t + "\"";
    std::printf(
        "{\"mode\": \"%s\", \"id\": \"%s\", \"ok\": %s, \"split\": %s, \"wall_s\": %.1f, "
        "\"cpu_s\": %.1f, \"peak_rss_mb\": %.0f, \"import\": %s, \"aten_binding_fallback\": %s, "
        "\"tiers\": [%s]}\n",
        mode.c_str(), item.id.c_str(), ok ? "true" : "false", split ? "true" : "false", wall, cpu,
        peak_rss_mb, imported.c_str(),
        compiler.aten_binding_fallbacks() != item_aten0 ? "true" : "false", tiers.c_str());
    if (!ok) std::printf("  %s\n", out.log_excerpt.substr(0, 400).c_str());
    std::fflush(stdout);
  }
  std::printf(
      "{\"mode\": \"%s\", \"items\": %zu, \"failures\": %d, \"cpu_s\": %.1f, "
      "\"wall_s\": %.1f, \"split_fallbacks\": %llu, \"lean_header_fallbacks\": %llu, "
      "\"aten_binding_fallbacks\": %llu, \"load\": \"%s\"}\n",
      mode.c_str(), items.size(), failures, total_cpu, total_wall,
      static_cast<unsigned long long>(compiler.split_fallbacks() - fallbacks0),
      static_cast<unsigned long long>(compiler.lean_header_fallbacks()),
      static_cast<unsigned long long>(compiler.aten_binding_fallbacks() - aten0),
      load_average().c_str());
  if (!f.keep) dice::remove_tree(o.cache_dir).ignore();
  return failures;
}

}  // namespace

int main(int argc, char** argv) {
  Flags f;
  if (!parse(argc, argv, &f)) {
    std::fprintf(stderr, "usage: see the comment at the top of split_compile_bench.cc\n");
    return 2;
  }
  auto items = load_items(f);
  if (!items.ok() || items->empty()) {
    std::fprintf(stderr, "%s\n", items.ok() ? "no items" : items.status().to_string().c_str());
    return 2;
  }
  for (const auto& mode : f.modes) {
    if (mode != "classify" && mode != "split" && mode != "lean" && mode != "full") {
      std::fprintf(stderr, "unknown mode '%s' (classify, split, lean or full)\n", mode.c_str());
      return 2;
    }
  }
  int failures = 0;
  for (const auto& mode : f.modes) {
    if (mode == "classify") {
      int split = 0;
      for (const auto& item : *items) {
        auto s = split_host_device(item.ext);
        split += s.ok();
        if (s.ok() && !f.dump.empty()) {
          fs::create_directories(f.dump);
          std::ofstream(f.dump + "/" + item.id + ".kernels.cu") << s->device_unit;
          std::ofstream(f.dump + "/" + item.id + ".host.cpp") << s->host_part;
        }
        std::printf("%s\t%s\n", item.id.c_str(),
                    s.ok() ? ("split: " + std::to_string(s->kernels) + " kernels, " +
                              std::to_string(s->launches) + " launches")
                                 .c_str()
                           : s.status().message().c_str());
      }
      std::printf("split applies to %d of %zu items\n", split, items->size());
      continue;
    }
    ToolchainOptions to;
    to.python = f.python;
    to.cuda_arch = f.arch;
    auto toolchain = probe_toolchain(to);
    if (!toolchain.ok()) {
      std::fprintf(stderr, "%s\n", toolchain.status().to_string().c_str());
      return 3;
    }
    failures += build_all(f, *toolchain, *items, mode);
  }
  return failures == 0 ? 0 : 1;
}
