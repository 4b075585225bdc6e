// dice-judge: judges candidate CUDA kernels offline with the reward service's pipeline (extract,
// static checks, nvcc with the compile cache, sandboxed evaluation on the GPU), one JSON line
// per verdict (format: reward/judge/judge.h). For researchers, and for the comparison with
// KernelBench's own evaluation (tools/bench/reward/kernelbench/).
//
//   dice-judge --items kernel_infilling_dev.json [--out verdicts.jsonl] [--variants broken]
//              [--dump-sources DIR] [flags below]
//
// Exit (common/exit_codes.h): 0 all judged (whatever the verdicts), 1 a verdict line could not
// be written, 2 bad flags or input (or an --out/--summary-out that cannot be written), 4
// (kExitNoDevice) no GPU toolchain here (nvcc, PyTorch with CUDA, a GPU): a verdict without an
// evaluation would be a fake one.
#include <charconv>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <string>
#include <thread>

#include "common/config/field_checks.h"
#include "common/config/scalar_text.h"
#include "common/durable_file.h"
#include "common/exit_codes.h"
#include "common/log.h"
#include "reward/judge/judge.h"
#include "reward/judge/judge_resume.h"
#include "reward/reward_worker.h"

namespace {

// {build_memory_mb} stands for the default: usage() fills it in, so the text cannot drift.
constexpr const char* kUsage = R"(usage: dice-judge --items FILE [options]
  --items FILE            JSON array of items (reward/judge/judge_items.h): id, pytorch_code and either
                          prefix/middle/suffix (infilling) or cuda_code / candidate (whole file)
  --out FILE              verdict lines go here (default: stdout)
  --resume                with --out: judge only the candidates FILE has no line for, and
                          append (a line cut by a kill is judged again)
  --summary-out FILE      the summary as one JSON object (it also goes to stderr as text)
  --dump-sources DIR      write each judged file, its reference and DIR/manifest.jsonl
  --dump-only             with --dump-sources: write the files and stop (no GPU needed)
  --limit N               only the first N items
  --variants none|broken  broken: also judge two deliberately broken variants of each item
                          (reward/judge/judge_variants.h); default none
  --python PATH           python with torch (default: python3)
  --nvcc PATH             default /usr/local/cuda/bin/nvcc
  --cuda-arch ARCH        e.g. sm_90 (default: the GPU's)
  --compile-cache DIR     build cache keyed by source hash (default runs/compile_cache)
  --compile-jobs N        compiles at once (default: the number of cores)
  --compile-memory-mb N   MiB the compiles may hold at once: each build reserves
                          {build_memory_mb} MiB (reward.compile_build_memory_mb's default)
                          and starts only while the host's available memory also covers
                          it; 0 = three quarters of the host's memory (default 0)
  --gpu-slots N           candidates evaluated at once on each GPU (default 4)
  --trials N              correctness trials (default 5, as KernelBench's scripts)
  --tolerance X           allclose atol = rtol for every dtype (default 0.01, DICE's)
  --timing on|off         time correct candidates against eager PyTorch (default off)
  --timing-trials N       calls of the candidate timed, split over the judge's TIMING_ROUNDS
                          rounds (N / TIMING_ROUNDS a round, rounded up, at least 2), each
                          round clocked by the judge; the reference is timed on the same
                          inputs once the candidate's processes are gone (default 100)
  --timing-exclusive on|off
                          time each candidate with its GPU to itself: the other slots'
                          evaluations wait (default on)
  --memory-limit-mb N     address-space limit of a candidate process, 0 = none (default 65536)
  --timeout-seconds N     per candidate's evaluation (default 300)
  --compile-budget-seconds N
                          per candidate's compile: all its modules and header tiers
                          (default 300)
  --prestart on|off       start each slot's next evaluation process while the current one
                          runs (default on)
  --evaluators-ahead N    with --prestart on: processes kept started ahead per slot (default 1)
  --judge-jobs N          with --prestart on: candidates one judge process judges in turn
                          before a fresh one replaces it; 1 = a fresh judge per candidate
                          (default 16; the runner is always fresh)
  --kernel-check KIND     auto|profiler|cupti: how a run of the candidate's own kernel is
                          seen (default auto: cupti where this build has the launch probe,
                          else profiler; cupti needs a build that found CUPTI)
  --prepare on|off        build the binding headers' precompiled headers before judging, as a
                          reward worker does when it starts (default on; their seconds are the
                          summary's prepare_seconds, outside its seconds); off: builds that start
                          before they are ready compile without them
  --log-level LEVEL       debug|info|warn|error (default info; debug adds each evaluation's
                          seconds per phase)
GPUs: the ordinals in CUDA_VISIBLE_DEVICES, else GPU 0.
)";

struct Flags {
  std::string items, out, summary_out, dump_dir;
  size_t limit = 0;  // 0: all
  bool broken = false;
  bool dump_only = false;
  bool resume = false;
  bool prepare = true;
  int gpu_slots = 4;
  dice::RewardOptions reward;
  dice::LogLevel log_level = dice::LogLevel::kInfo;
};

// kUsage with its placeholder filled in.
std::string usage() {
  std::string text = kUsage;
  const std::string placeholder = "{build_memory_mb}";
  text.replace(text.find(placeholder), placeholder.size(),
               std::to_string(dice::RewardOptions().compile_build_memory_mb));
  return text;
}

struct UsageError {
  std::string message;
};

long long parse_int(const std::string& flag, const std::string& text, long long min) {
  long long value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size() || value < min) {
    throw UsageError{flag + " \"" + text + "\": expected an integer >= " + std::to_string(min)};
  }
  return value;
}

double parse_positive(const std::string& flag, const std::string& text) {
  char* end = nullptr;
  const double value = std::strtod(text.c_str(), &end);
  if (text.empty() || end != text.c_str() + text.size() || !(value > 0)) {
    throw UsageError{flag + " \"" + text + "\": expected a positive number"};
  }
  return value;
}

// "one of auto, profiler, cupti": the config's names, so the flag and reward.kernel_check cannot
// drift.
std::string kernel_check_names() {
  return "one of " + dice::config::join_names(dice::config::enum_name_list<dice::KernelCheck>());
}

bool parse_on_off(const std::string& flag, const std::string& text) {
  if (text == "on") return true;
  if (text == "off") return false;
  throw UsageError{flag + " \"" + text + "\": expected on or off"};
}

// One "--flag value" into `flags`: a flat table, one branch per flag of usage().
void apply_flag(const std::string& flag, const std::string& value, Flags* flags) {
  Flags& f = *flags;
  auto& r = f.reward;
  if (flag == "--items")
    f.items = value;
  else if (flag == "--out")
    f.out = value;
  else if (flag == "--summary-out")
    f.summary_out = value;
  else if (flag == "--dump-sources")
    f.dump_dir = value;
  else if (flag == "--limit")
    f.limit = static_cast<size_t>(parse_int(flag, value, 1));
  else if (flag == "--variants") {
    if (value != "none" && value != "broken") {
      throw UsageError{flag + " \"" + value + "\": expected none or broken"};
    }
    f.broken = value == "broken";
  } else if (flag == "--python")
    r.python_path = value;
  else if (flag == "--nvcc")
    r.nvcc_path = value;
  else if (flag == "--cuda-arch")
    r.cuda_arch = value;
  else if (flag == "--compile-cache")
    r.compile_cache_dir = value;
  else if (flag == "--compile-jobs")
    r.compile_jobs = static_cast<int>(parse_int(flag, value, 1));
  else if (flag == "--compile-memory-mb")
    r.compile_memory_mb = parse_int(flag, value, 0);
  else if (flag == "--gpu-slots")
    f.gpu_slots = static_cast<int>(parse_int(flag, value, 1));
  else if (flag == "--trials")
    r.correctness_trials = static_cast<int>(parse_int(flag, value, 1));
  else if (flag == "--tolerance") {
    const double tolerance = parse_positive(flag, value);
    r.tolerance.fp32 = r.tolerance.fp16 = r.tolerance.bf16 = tolerance;
  } else if (flag == "--timing")
    r.timing.enabled = parse_on_off(flag, value);
  else if (flag == "--timing-trials")
    r.timing.trials = static_cast<int>(parse_int(flag, value, 1));
  else if (flag == "--timing-exclusive")
    r.timing.exclusive = parse_on_off(flag, value);
  else if (flag == "--memory-limit-mb")
    r.sandbox.memory_limit_mb = parse_int(flag, value, 0);
  else if (flag == "--prestart")
    r.prestart_evaluators = parse_on_off(flag, value);
  else if (flag == "--prepare")
    f.prepare = parse_on_off(flag, value);
  else if (flag == "--evaluators-ahead")
    r.evaluators_ahead = static_cast<int>(parse_int(flag, value, 1));
  else if (flag == "--judge-jobs")
    r.judge_jobs = static_cast<int>(parse_int(flag, value, 1));
  else if (flag == "--kernel-check") {
    if (!dice::config::enum_from_name(value, &r.kernel_check))
      throw UsageError{flag + " \"" + value + "\": expected " + kernel_check_names()};
  } else if (flag == "--timeout-seconds") {
    r.timeout_seconds = static_cast<int>(parse_int(flag, value, 1));
  } else if (flag == "--compile-budget-seconds") {
    r.compile_budget_seconds = static_cast<double>(parse_int(flag, value, 1));
  } else if (flag == "--log-level") {
    if (!dice::parse_log_level(value, &f.log_level)) {
      throw UsageError{flag + " \"" + value + "\": expected debug, info, warn or error"};
    }
  } else {
    throw UsageError{"unknown flag " + flag};
  }
}

Flags parse_flags(int argc, char** argv) {
  Flags f;
  f.reward.correctness_trials = 5;
  f.reward.compile_jobs = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  f.reward.sandbox.memory_limit_mb = 65536;
  std::map<std::string, std::string> seen;
  for (int i = 1; i < argc; ++i) {
    std::string flag = argv[i];
    if (flag == "--help" || flag == "-h") throw UsageError{""};
    if (flag == "--dump-only") {
      f.dump_only = true;
      continue;
    }
    if (flag == "--resume") {
      f.resume = true;
      continue;
    }
    if (flag.rfind("--", 0) != 0) throw UsageError{"unexpected argument \"" + flag + "\""};
    std::string value;
    if (const size_t eq = flag.find('='); eq != std::string::npos) {
      value = flag.substr(eq + 1);
      flag = flag.substr(0, eq);
    } else if (i + 1 < argc) {
      value = argv[++i];
    } else {
      throw UsageError{flag + " needs a value"};
    }
    if (seen.count(flag)) throw UsageError{flag + " given twice"};
    seen[flag] = value;
    apply_flag(flag, value, &f);
  }
  if (f.items.empty()) throw UsageError{"--items is required"};
  if (f.dump_only && f.dump_dir.empty()) throw UsageError{"--dump-only needs --dump-sources"};
  if (f.resume && f.out.empty()) throw UsageError{"--resume needs --out"};
  return f;
}

// Builds the precompiled binding headers, as a reward worker does when it starts; their seconds.
double prepare_headers(dice::RewardPipeline& pipeline) {
  const auto start = std::chrono::steady_clock::now();
  const int ready = pipeline.compiler().prepare_binding_headers();
  const double prepare_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::cerr << "dice-judge: " << ready << " precompiled binding headers ready in "
            << prepare_seconds << " s\n";
  return prepare_seconds;
}

// The summary as one line of text on stderr.
void print_summary(const dice::JudgeSummary& summary) {
  std::cerr << "dice-judge: judged " << summary.candidates << " candidates in " << summary.seconds
            << " s (" << summary.per_minute() << " per minute): " << summary.compiled
            << " compiled, " << summary.correct << " correct, " << summary.cache_hits
            << " compile-cache hits; broken variants judged correct: " << summary.variants_correct
            << " of " << summary.variants << "\n";
}

int judge(const Flags& flags) {
  using namespace dice;
  auto items = load_judge_items(flags.items);
  if (!items.ok()) {
    std::cerr << "dice-judge: " << items.status().message() << "\n";
    return 2;
  }
  if (flags.limit > 0 && items->size() > flags.limit) items->resize(flags.limit);
  std::vector<std::string> without_variants;
  std::vector<JudgeItem> candidates = with_variants(items.value(), flags.broken, &without_variants);
  JudgedSoFar so_far;
  if (flags.resume) {
    auto judged = read_judged(flags.out);
    if (!judged.ok()) {
      std::cerr << "dice-judge: --resume: " << judged.status().to_string() << "\n";
      return 2;
    }
    so_far = std::move(judged).value();
    const std::size_t all = candidates.size();
    candidates = left_to_judge(candidates, so_far);
    std::cerr << "dice-judge: --resume: " << all - candidates.size() << " of " << all
              << " candidates already judged in " << flags.out << "\n";
    if (candidates.empty()) return 0;
  }
  if (!without_variants.empty()) {
    std::cerr << "dice-judge: no kernel store to break, so no variants, in item(s):";
    for (const auto& id : without_variants) std::cerr << " " << id;
    std::cerr << "\n";
  }
  if (!flags.dump_dir.empty()) {
    if (Status s = dump_sources(candidates, flags.dump_dir); !s.ok()) {
      std::cerr << "dice-judge: --dump-sources: " << s.to_string() << "\n";
      return 2;
    }
    std::cerr << "dice-judge: wrote " << candidates.size() << " candidates to " << flags.dump_dir
              << "/manifest.jsonl\n";
    if (flags.dump_only) return 0;
  }
  const RewardOptions& options = flags.reward;
  auto toolchain = probe_reward_toolchain(options);
  if (!toolchain.ok()) {
    std::cerr << "dice-judge: " << toolchain.status().to_string()
              << "\ndice-judge: judging needs nvcc, PyTorch with CUDA and a GPU; nothing judged "
                 "(no verdict is better than a fake one)\n";
    return kExitNoDevice;
  }
  auto gpus = visible_gpus();
  if (!gpus.ok()) {
    std::cerr << "dice-judge: " << gpus.status().to_string() << "\n";
    return gpus.status().code() == StatusCode::kInvalidArgument ? kExitBadInput : kExitNoDevice;
  }
  const std::vector<std::string> slots = gpu_slot_names(*gpus, flags.gpu_slots);
  std::ofstream out_file;
  if (!flags.out.empty()) {
    std::ios::openmode mode = std::ios::binary;
    if (flags.resume && std::filesystem::exists(flags.out)) {
      std::error_code ec;  // drop a line a kill cut short, then append after the complete ones
      std::filesystem::resize_file(flags.out, so_far.complete_bytes, ec);
      mode |= std::ios::app;
    }
    out_file.open(flags.out, mode);
    if (!out_file) {
      std::cerr << "dice-judge: --out " << flags.out << ": cannot write\n";
      return 2;
    }
  }
  std::ostream& out = flags.out.empty() ? std::cout : out_file;

  RewardPipeline pipeline(options, toolchain.value(), PipelineIdentity{"dice-judge", slots});
  std::cerr << "dice-judge: " << candidates.size() << " candidates (" << items->size()
            << " items), " << options.compile_jobs << " compile jobs, " << slots.size()
            << " GPU slots, arch " << toolchain->arch << ", torch " << toolchain->torch_version
            << "\n";
  const double prepare_seconds = flags.prepare ? prepare_headers(pipeline) : 0;
  // Enough in flight that every compile job and every GPU slot has a candidate.
  const int threads = options.compile_jobs + static_cast<int>(slots.size());
  JudgeSummary summary = run_judge(pipeline, candidates, threads, [&](const std::string& line) {
    out << line << "\n";
    out.flush();
  });
  summary.prepare_seconds = prepare_seconds;
  print_summary(summary);
  if (!flags.summary_out.empty()) {
    // Whole or not at all: a bench or a GPU script reads it after the run.
    Status written = write_file_atomically(flags.summary_out, summary_json(summary) + "\n");
    if (!written.ok()) {
      std::cerr << "dice-judge: --summary-out: " << written.to_string() << "\n";
      return 2;
    }
  }
  return out ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  Flags flags;
  try {
    flags = parse_flags(argc, argv);
  } catch (const UsageError& e) {
    if (e.message.empty()) {
      std::cout << usage();
      return 0;
    }
    std::cerr << "dice-judge: " << e.message << "\n" << usage();
    return 2;
  }
  dice::LogOptions log;
  log.level = flags.log_level;
  log.component = "judge";
  dice::log_configure(log);
  return judge(flags);
}
