#include "tools/dice-data/cli.h"

#include <cerrno>
#include <cstdlib>
#include <limits>
#include <set>
#include <utility>

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
  DICE_ASSIGN_OR_RETURN(
      const auto flags,
      flag_values(args, {"--out", "--seed", "--sft-pairs", "--rl-tasks-per-level",
                         "--heldout-per-level", "--names", "--layout", "--rl-keys"}));
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

}  // namespace

std::string usage_text() {
  return R"(Usage: dice-data curriculum --out DIR [options]
       dice-data split-infill (--candidate FILE.py | --items FILE) [--out FILE]

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
  rl_infill.json       phase-1 tasks {id, level, pytorch_code, prefix, suffix, middle, cuda_code,
                       shape_variants}, sorted by level
  rl_e2e.json          phase-2 tasks {id, level, pytorch_code, cuda_code, shape_variants}
  heldout_infill.json  held-out tasks, as rl_infill.json
  heldout_e2e.json     held-out tasks, as rl_e2e.json
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
unique over all files.

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
    return Status::invalid_argument("missing the command (curriculum or split-infill)");
  if (args[0] == "curriculum") return parse_curriculum(args);
  if (args[0] == "split-infill") return parse_split_infill(args);
  return Status::invalid_argument("unknown command '" + args[0] +
                                  "' (expected curriculum or split-infill)");
}

}  // namespace dice::data
