#include "tools/dice-data/cli.h"

#include <cerrno>
#include <cstdlib>
#include <limits>
#include <map>
#include <set>
#include <utility>

#include "common/exit_codes.h"

namespace dice::data {
namespace {

// Each count is capped so that a typo cannot ask for a corpus of many gigabytes.
constexpr long long kMaxCount = 1000000;

Result<unsigned long long> parse_unsigned(const std::string& flag, const std::string& text,
                                          unsigned long long max) {
  const std::string what =
      flag + ": expected an integer in [0, " + std::to_string(max) + "], got '" + text + "'";
  if (text.empty() || text.find_first_not_of("0123456789") != std::string::npos)
    return Status::invalid_argument(what);
  errno = 0;
  const unsigned long long v = std::strtoull(text.c_str(), nullptr, 10);
  if (errno == ERANGE || v > max) return Status::invalid_argument(what);
  return v;
}

// The (flag, value) pairs of args[1...], each flag one of `known`.
Result<std::vector<std::pair<std::string, std::string>>> flag_values(
    const std::vector<std::string>& args, const std::set<std::string>& known) {
  std::vector<std::pair<std::string, std::string>> flags;
  for (std::size_t i = 1; i < args.size(); ++i) {
    std::string flag = args[i];
    std::string value;
    bool inline_value = false;
    if (const auto eq = flag.find('='); flag.rfind("--", 0) == 0 && eq != std::string::npos) {
      value = flag.substr(eq + 1);
      flag = flag.substr(0, eq);
      inline_value = true;
    }
    if (known.count(flag) == 0)
      return Status::invalid_argument("unknown argument '" + args[i] + "'");
    if (!inline_value) {
      if (i + 1 >= args.size()) return Status::invalid_argument(flag + ": missing its value");
      value = args[++i];
    }
    flags.emplace_back(flag, value);
  }
  return flags;
}

Result<CliRequest> parse_curriculum(const std::vector<std::string>& args) {
  CliRequest req;
  DICE_ASSIGN_OR_RETURN(const auto flags,
                        flag_values(args, {"--out", "--seed", "--sft-pairs", "--rl-tasks-per-level",
                                           "--heldout-per-level", "--heldout-indist-per-level",
                                           "--names", "--layout", "--rl-keys"}));
  bool have_out = false;
  for (const auto& [flag, value] : flags) {
    if (flag == "--out") {
      if (value.empty()) return Status::invalid_argument("--out: expected a folder, got ''");
      req.out_dir = value;
      have_out = true;
      continue;
    }
    if (flag == "--rl-keys") {
      if (value != "novel" && value != "seen") {
        return Status::invalid_argument(flag + ": expected novel or seen, got '" + value + "'");
      }
      req.options.rl_keys = value == "novel" ? RlKeys::kNovel : RlKeys::kSeen;
      continue;
    }
    if (flag == "--names" || flag == "--layout") {
      if (value != "varied" && value != "fixed") {
        return Status::invalid_argument(flag + ": expected varied or fixed, got '" + value + "'");
      }
      (flag == "--names" ? req.options.names : req.options.layout) =
          value == "fixed" ? Variety::kFixed : Variety::kVaried;
      continue;
    }
    const unsigned long long max =
        flag == "--seed" ? std::numeric_limits<unsigned long long>::max() : kMaxCount;
    DICE_ASSIGN_OR_RETURN(const unsigned long long n, parse_unsigned(flag, value, max));
    if (flag == "--seed") req.options.seed = n;
    if (flag == "--sft-pairs") req.options.sft_pairs = static_cast<int>(n);
    if (flag == "--rl-tasks-per-level") req.options.rl_tasks_per_level = static_cast<int>(n);
    if (flag == "--heldout-per-level") req.options.heldout_per_level = static_cast<int>(n);
    if (flag == "--heldout-indist-per-level") {
      req.options.heldout_indist_per_level = static_cast<int>(n);
    }
  }
  if (!have_out) return Status::invalid_argument("--out: required (the folder to write into)");
  return req;
}

Result<CliRequest> parse_split_infill(const std::vector<std::string>& args) {
  CliRequest req;
  req.command = Command::kSplitInfill;
  DICE_ASSIGN_OR_RETURN(const auto flags, flag_values(args, {"--candidate", "--items", "--out"}));
  for (const auto& [flag, value] : flags) {
    if (value.empty()) return Status::invalid_argument(flag + ": expected a file, got ''");
    (flag == "--candidate" ? req.split.candidate
     : flag == "--items"   ? req.split.items
                           : req.split.out) = value;
  }
  if (req.split.candidate.empty() == req.split.items.empty()) {
    return Status::invalid_argument(
        req.split.candidate.empty()
            ? "--candidate or --items: required (the file to split)"
            : "--candidate and --items: give one of them (a candidate file or a file of items)");
  }
  return req;
}

// A number in (0, max]: "<flag>: expected a number > 0 ..." otherwise.
Result<double> parse_positive(const std::string& flag, const std::string& text, double max) {
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (text.empty() || end != text.c_str() + text.size() || !(v > 0) || !(v <= max)) {
    return Status::invalid_argument(flag + ": expected a number > 0 and <= " + std::to_string(max) +
                                    ", got '" + text + "'");
  }
  return v;
}

Result<CliRequest> parse_build_sft(const std::vector<std::string>& args) {
  CliRequest req;
  req.command = Command::kBuildSft;
  BuildSftOptions& o = req.build_sft;
  DICE_ASSIGN_OR_RETURN(
      const auto flags,
      flag_values(args, {"--input", "--out", "--min-speedup", "--noise-z", "--form", "--python",
                         "--nvcc", "--compile-cache", "--compile-jobs", "--gpu-slots", "--trials",
                         "--timing-trials", "--timeout-seconds"}));
  // Integer flags: where each goes and its range.
  struct Count {
    int* field;
    unsigned long long min, max;
  };
  const std::map<std::string, Count> counts = {
      {"--compile-jobs", {&o.judge.compile_jobs, 0, 1024}},
      {"--gpu-slots", {&o.judge.gpu_slots, 1, 64}},
      {"--trials", {&o.judge.correctness_trials, 1, 100}},
      // The noise check needs a spread: two timed trials at least.
      {"--timing-trials", {&o.judge.timing_trials, 2, 100000}},
      {"--timeout-seconds", {&o.judge.timeout_seconds, 1, 86400}},
  };
  for (const auto& [flag, value] : flags) {
    if (const auto count = counts.find(flag); count != counts.end()) {
      const Count& c = count->second;
      const auto n = parse_unsigned(flag, value, c.max);
      if (!n.ok() || *n < c.min) {
        return Status::invalid_argument(flag + ": expected an integer in [" +
                                        std::to_string(c.min) + ", " + std::to_string(c.max) +
                                        "], got '" + value + "'");
      }
      *c.field = static_cast<int>(*n);
    } else if (flag == "--min-speedup") {
      DICE_ASSIGN_OR_RETURN(o.rule.min_speedup, parse_positive(flag, value, 1e6));
    } else if (flag == "--noise-z") {
      // No z = 0: the noise check is what keeps a launch-overhead artefact out of the data.
      DICE_ASSIGN_OR_RETURN(o.rule.noise_z, parse_positive(flag, value, 10));
    } else if (flag == "--form") {
      if (value != "end_to_end" && value != "infill" && value != "both") {
        return Status::invalid_argument(flag + ": expected end_to_end, infill or both, got '" +
                                        value + "'");
      }
      o.form = value == "infill" ? SftForm::kInfill
               : value == "both" ? SftForm::kBoth
                                 : SftForm::kEndToEnd;
    } else {
      if (value.empty()) return Status::invalid_argument(flag + ": expected a path, got ''");
      (flag == "--input"    ? o.input
       : flag == "--out"    ? o.out_dir
       : flag == "--python" ? o.judge.python
       : flag == "--nvcc"   ? o.judge.nvcc
                            : o.judge.compile_cache) = value;
    }
  }
  if (o.input.empty()) return Status::invalid_argument("--input: required (the pairs to judge)");
  if (o.out_dir.empty())
    return Status::invalid_argument("--out: required (the folder to write into)");
  return req;
}

}  // namespace

std::string usage_text() {
  return R"(Usage: dice-data curriculum --out DIR [options]
       dice-data split-infill (--candidate FILE.py | --items FILE) [--out FILE]
       dice-data build-sft --input FILE --out DIR [options]

curriculum: generates a deterministic curriculum of PyTorch -> CUDA kernel pairs for dice (SFT
data, RL tasks for both phases, a held-out split, and dice-judge items that check every pair).

Options:
  --out DIR                  folder to write into (created if missing); required
  --seed N                   seed of every draw; the same seed gives byte-identical files
                             (default 1)
  --sft-pairs N              pairs in sft.json, half end-to-end, half infilling, spread evenly
                             over levels 1-3 (default 3000)
  --rl-tasks-per-level N     tasks per level in each of rl_infill.json and rl_e2e.json
                             (default 64)
  --heldout-per-level N      tasks per level in each of heldout_infill.json and
                             heldout_e2e.json (default 32)
  --heldout-indist-per-level N
                             tasks per level in each of heldout_indist_infill.json and
                             heldout_indist_e2e.json (default: --heldout-per-level's)
  --names varied|fixed       names in the CUDA code: drawn per pair (default), or fixed per op
                             label (<label>_kernel, cuda_source, x, out, n...) with the same
                             tasks, shapes and layouts: for a small model that cannot yet copy
                             a name from its definition to its uses
  --layout varied|fixed      the candidates' layout (threads, loop shape, helpers, quoting...)
                             and helper names: drawn per pair (default), or one, with the same
                             tasks, shapes and parameters: for a small model that decodes
                             several positions at once and mixes layouts
  --rl-keys seen|novel       the combinations the RL tasks are built on: SFT's own (default),
                             or keys of their own, reserved from SFT as the held-out ones are,
                             so that RL trains where the policy has to generalise (SFT then
                             covers fewer combinations)
  -h, --help                 this text
Counts are integers in [0, 1000000]; flags take "--flag value" or "--flag=value".

Files written to DIR:
  sft.json             [{id, level, pytorch_code, cuda_code}] and
                       [{id, level, pytorch_code, prefix, middle, suffix}], alternating
  rl_infill.json       phase-1 tasks {id, level, op_key, pytorch_code, prefix, suffix, middle,
                       cuda_code, shape_variants}, sorted by level
  rl_e2e.json          phase-2 tasks {id, level, op_key, pytorch_code, cuda_code,
                       shape_variants}
  heldout_infill.json  held-out tasks (out of distribution: keys no training pair has), as
                       rl_infill.json
  heldout_e2e.json     held-out tasks, as rl_e2e.json
  heldout_indist_infill.json, heldout_indist_e2e.json
                       in-distribution held-out tasks: fresh instances of the RL files' keys
                       (new sizes, names, dtypes, constants), none identical to a training pair
  verify_items.json    every pair once as dice-judge items {id, pytorch_code, cuda_code,
                       shape_variants}: dice-judge --items verify_items.json checks them all
  MANIFEST.json        seed, generator version, counts per file, level, family, dtype and op,
                       the held-out keys and the RL split's keys

Levels: "1" single element-wise ops (families unary, binary), "2" fused chains of 2-4 ops
(chain), "3" reductions along the last dimension and row normalisations (reduce, norm).
Held-out keys (level-1 op parameter values and binary broadcasts, level-2 op combinations,
level-3 (normalisation, dtype) and (reduction, keepdim) pairs) are reserved from the seed and
never occur in sft.json or rl_*.json; with --rl-keys novel the RL tasks are built on keys of the
same kinds reserved next, which sft.json never holds either. Ids are <family>-<level>-<n>,
unique over all files. A task's op_key is what it asks for without its surface: relu,
leaky_relu(negative_slope=0.2), add[row], sub>scale>relu, max/keepdim=True, softmax/float16;
tools/learning-report's bootstrap resamples these keys.

split-infill: splits correct KernelBench candidates (a CUDA source string that load_inline
compiles, class ModelNew) into DICE's phase-1 infilling task, as kernel_infilling_dev.json has
them: prefix (everything before the CUDA source's assignment: the imports), middle (the
assignment, source = """...""": kernels and host launchers) and suffix (everything after it:
cpp declarations, load_inline(...), class ModelNew). prefix + middle + suffix is the input byte
for byte. A file without that shape (no load_inline, several, a cuda_sources that is not one
variable assigned a string once at the top level, no class ModelNew, an unterminated string,
not UTF-8, empty) is an error naming the file and line.

Options:
  --candidate FILE.py        one candidate file: writes {"prefix", "middle", "suffix"}
  --items FILE               a JSON array (starting with "[") or JSON Lines of items with
                             cuda_code, such as kernel_infilling_dev.json: writes the items with
                             prefix, middle and suffix set (replacing their own), in the same
                             form; every item that does not split is named, and nothing is
                             written
  --out FILE                 the file to write (replaced whole); default: standard output
  -h, --help                 this text

Exit status: 0 written, 1 a file could not be read, split or written, 2 bad arguments.

build-sft: judges PyTorch -> CUDA pairs with the reward pipeline (extraction, static checks,
nvcc, the sandboxed check against the PyTorch reference, then timing by the judge's clock, the
GPU to itself: untimed warm-up calls, the kernel's calls in rounds each clocked by the judge, and
the reference's on the same inputs once the kernel's processes are gone) and keeps those whose
kernel is correct and at least --min-speedup times faster than eager PyTorch on the
noise-checked lower bound of the speedup (dice-eval's rule: S_low = S * exp(-z * se), se from
both timings' means, spreads and rounds), never on the raw ratio: a tiny kernel with widely
spread timings is not kept. Pairs that are the same once comments (Python #, C // and /* */ in
strings) and white space are taken out are judged once: the first is kept, the rest counted as
duplicates.

Options:
  --input FILE               pairs: a JSON array or JSON Lines of {id or idx (optional),
                             level (optional), pytorch_code, cuda_code, shape_variants
                             (optional)}, as data/dice-rl/ and verify_items.json have them
  --out DIR                  folder to write into (created if missing); required
  --min-speedup X            keep at or above this noise-checked speedup (default 2)
  --noise-z Z                z of the one-sided lower bound, > 0 (default 1.645: 95%)
  --form F                   the SFT items, as the learner's SFT reads them: end_to_end
                             {id, level, pytorch_code, cuda_code} (default), infill {id, level,
                             pytorch_code, prefix, middle, suffix} (DICE's split, as
                             split-infill makes it), or both (the infill item's id ends in
                             "/infill")
  --python PATH              Python with torch (default python3)
  --nvcc PATH                default /usr/local/cuda/bin/nvcc
  --compile-cache DIR        build cache keyed by source hash (default runs/compile_cache)
  --compile-jobs N           compiles at once, 0 = the number of cores (default 0)
  --gpu-slots N              candidates checked at once on each GPU; timing has the GPU
                             alone (default 4)
  --trials N                 correctness trials (input sets) (default 5)
  --timing-trials N          calls of kernel and reference timed, at least 2, split over the
                             judge's TIMING_ROUNDS rounds (default 100)
  --timeout-seconds N        per candidate's evaluation (default 300)
  -h, --help                 this text
GPUs: the ordinals in CUDA_VISIBLE_DEVICES, else GPU 0.

Files written to DIR:
  verdicts.jsonl       one verdict line per judged pair (dice-judge's format and the pair's
                       hash), appended as each completes; a rerun judges only the pairs it has
                       no complete line for (a line cut by a kill is judged again), so a killed
                       run goes on where it stopped, and a rerun with another --min-speedup,
                       --noise-z or --form judges nothing and needs no GPU
  sft.json             the kept pairs, in input order, with their speedup and its lower bound
  report.json          counts by level and outcome class, the speedup histogram (raw and
                       lower bound), every pair's outcome
  report.md            the same for people
Outcome classes: kept, noisy (raw speedup passes, its lower bound does not), slow, untimed,
zeroReward, the verdict's failure class (compileError, incorrect, staticCheck...), duplicate.

Without a GPU (no nvcc, no PyTorch with CUDA, or no GPU) nothing can be measured, so nothing is
kept: the pairs left to judge are only screened (extraction and static checks), nothing is added
to verdicts.jsonl, no sft.json is written, report-no-gpu.json and report-no-gpu.md say what the
screen found, and the exit status is )" +
         std::to_string(kExitNoDevice) + R"( (common/exit_codes.h).

Exit status: 0 written, 1 a file could not be read or written or the judge failed (the verdicts
so far are kept: run again to go on), 2 bad arguments, )" +
         std::to_string(kExitNoDevice) + R"( no GPU (nothing kept).
)";
}

Result<CliRequest> parse_command_line(const std::vector<std::string>& args) {
  for (const auto& a : args)
    if (a == "--help" || a == "-h") {
      CliRequest req;
      req.help = true;
      return req;
    }
  if (args.empty())
    return Status::invalid_argument("missing the command (curriculum, split-infill or build-sft)");
  if (args[0] == "curriculum") return parse_curriculum(args);
  if (args[0] == "split-infill") return parse_split_infill(args);
  if (args[0] == "build-sft") return parse_build_sft(args);
  return Status::invalid_argument("unknown command '" + args[0] +
                                  "' (expected curriculum, split-infill or build-sft)");
}

}  // namespace dice::data
