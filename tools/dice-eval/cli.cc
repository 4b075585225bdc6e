#include "tools/dice-eval/cli.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <set>
#include <sstream>

namespace dice::eval {
namespace {

// Keys dice-eval sets itself, and what to do instead.
const std::map<std::string, std::string>& owned_keys() {
  static const auto* const kKeys = new std::map<std::string, std::string>{
      {"run.id", "use --id"},
      {"run.reward_log_path", "use --reward-log"},
      {"curriculum_file", "it writes the curriculum"},
      {"rollout.model_path", "use --model"},
      {"learner.update_policy", "an evaluation never updates the policy"},
      {"learner.mode", "an evaluation runs the learner's eval phases"},
      {"learner.phases", "it writes the curriculum"},
      {"reward.mode", "use --reward-mode"},
      {"reward.libraries", "it judges with libraries allowed and reports own kernels apart"},
      {"reward.tolerance.fp32", "every table is judged at DICE's tolerance"},
      {"reward.tolerance.fp16", "every table is judged at DICE's tolerance"},
      {"reward.tolerance.bf16", "every table is judged at DICE's tolerance"},
      {"cluster.local.state_dir", "OUT/cluster"},
  };
  return *kKeys;
}

const std::set<std::string>& value_flags() {
  static const auto* const kFlags = new std::set<std::string>{
      "--model",          "--problems",    "--out",     "--level",           "--kind",
      "--levels",         "--per-level",   "--samples", "--pass-k",          "--decoding",
      "--max-new-tokens", "--reward-mode", "--noise-z", "--config",          "--id",
      "--reward-log",     "--chunk-size",  "--retries", "--status-interval", "--timeout",
      "--cluster"};
  return *kFlags;
}

Result<long long> parse_integer(const std::string& flag, const std::string& text, long long low,
                                long long high) {
  const std::string what = flag + ": expected an integer in [" + std::to_string(low) + ", " +
                           std::to_string(high) + "], got '" + text + "'";
  if (text.empty() || text.find_first_not_of("0123456789") != std::string::npos) {
    return Status::invalid_argument(what);
  }
  errno = 0;
  const long long value = std::strtoll(text.c_str(), nullptr, 10);
  if (errno == ERANGE || value < low || value > high) return Status::invalid_argument(what);
  return value;
}

Result<double> parse_number(const std::string& flag, const std::string& text, double low,
                            double high) {
  char range[64];
  std::snprintf(range, sizeof range, "[%g, %g]", low, high);
  const std::string what = flag + ": expected a number in " + range + ", got '" + text + "'";
  char* end = nullptr;
  errno = 0;
  const double value = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || errno == ERANGE || !std::isfinite(value) || value < low ||
      value > high) {
    return Status::invalid_argument(what);
  }
  return value;
}

std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> items;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) items.push_back(item);
  return items;
}

// Sets one flag's value into *req.
Status apply_flag(const std::string& flag, const std::string& value, EvalRequest* req,
                  bool* pass_k_given) {
  auto non_empty = [&](std::string* field) -> Status {
    if (value.empty()) return Status::invalid_argument(flag + ": expected a value, got ''");
    *field = value;
    return Status::ok_status();
  };
  if (flag == "--model") return non_empty(&req->model);
  if (flag == "--problems") return non_empty(&req->problems);
  if (flag == "--out") return non_empty(&req->out);
  if (flag == "--config") return non_empty(&req->config);
  if (flag == "--reward-log") return non_empty(&req->reward_log);
  if (flag == "--cluster") return non_empty(&req->cluster);
  if (flag == "--level") return non_empty(&req->problem_options.level);
  if (flag == "--levels") {
    req->problem_options.levels = split_list(value);
    if (req->problem_options.levels.empty()) {
      return Status::invalid_argument("--levels: expected levels such as 1,2, got ''");
    }
    return Status::ok_status();
  }
  if (flag == "--kind") {
    if (value != "infill" && value != "end_to_end") {
      return Status::invalid_argument("--kind: expected infill or end_to_end, got '" + value + "'");
    }
    req->problem_options.kind = value == "infill" ? TaskKind::kInfill : TaskKind::kEndToEnd;
    return Status::ok_status();
  }
  if (flag == "--decoding") {
    if (value != "greedy" && value != "sample") {
      return Status::invalid_argument("--decoding: expected greedy or sample, got '" + value + "'");
    }
    req->decoding = value;
    return Status::ok_status();
  }
  if (flag == "--reward-mode") {
    if (value != "full" && value != "compile_only" && value != "extraction_only") {
      return Status::invalid_argument(
          "--reward-mode: expected full, compile_only or extraction_only, got '" + value + "'");
    }
    req->reward_mode = value;
    return Status::ok_status();
  }
  if (flag == "--id") {
    if (value.empty() || value.size() > 64 ||
        value.find_first_not_of(
            "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") !=
            std::string::npos) {
      return Status::invalid_argument(
          "--id: expected 1-64 letters, digits, '.', '_' or '-', got '" + value + "'");
    }
    req->id = value;
    return Status::ok_status();
  }
  if (flag == "--pass-k") {
    req->pass_k.clear();
    for (const std::string& item : split_list(value)) {
      DICE_ASSIGN_OR_RETURN(long long k, parse_integer(flag, item, 1, 100000));
      req->pass_k.push_back(static_cast<int>(k));
    }
    if (req->pass_k.empty()) return Status::invalid_argument("--pass-k: expected k such as 1,5");
    *pass_k_given = true;
    return Status::ok_status();
  }
  if (flag == "--noise-z") {
    DICE_ASSIGN_OR_RETURN(req->noise_z, parse_number(flag, value, 0, 10));
    return Status::ok_status();
  }
  if (flag == "--status-interval") {
    DICE_ASSIGN_OR_RETURN(req->status_interval, parse_number(flag, value, 0.1, 86400));
    return Status::ok_status();
  }
  if (flag == "--timeout") {
    DICE_ASSIGN_OR_RETURN(req->timeout, parse_number(flag, value, 0, 30.0 * 86400));
    return Status::ok_status();
  }
  long long n = 0;
  if (flag == "--samples") {
    DICE_ASSIGN_OR_RETURN(n, parse_integer(flag, value, 1, 100000));
    req->samples = static_cast<int>(n);
  } else if (flag == "--per-level") {
    DICE_ASSIGN_OR_RETURN(n, parse_integer(flag, value, 0, 1000000));
    req->problem_options.per_level = static_cast<int>(n);
  } else if (flag == "--max-new-tokens") {
    DICE_ASSIGN_OR_RETURN(n, parse_integer(flag, value, 1, 1000000));
    req->max_new_tokens = static_cast<int>(n);
  } else if (flag == "--chunk-size") {
    DICE_ASSIGN_OR_RETURN(n, parse_integer(flag, value, 1, 1000000));
    req->chunk_size = static_cast<int>(n);
  } else if (flag == "--retries") {
    DICE_ASSIGN_OR_RETURN(n, parse_integer(flag, value, 0, 100));
    req->retries = static_cast<int>(n);
  }
  return Status::ok_status();
}

Status check_override(const std::string& text) {
  const std::string key = text.substr(0, text.find('='));
  if (key.empty()) return Status::invalid_argument("override '" + text + "': no key before '='");
  auto owned = owned_keys().find(key);
  if (owned != owned_keys().end()) {
    return Status::invalid_argument("override '" + text + "': dice-eval sets " + key + " itself (" +
                                    owned->second + ")");
  }
  return Status::ok_status();
}

}  // namespace

Result<EvalRequest> parse_command_line(const std::vector<std::string>& args) {
  EvalRequest req;
  for (const std::string& a : args) {
    if (a == "--help" || a == "-h") {
      req.help = true;
      return req;
    }
  }
  bool pass_k_given = false;
  bool decoding_given = false;
  for (std::size_t i = 0; i < args.size(); ++i) {
    std::string flag = args[i];
    std::string value;
    if (flag == "--no-timing") {
      req.timing = false;
      continue;
    }
    if (flag.rfind("--", 0) != 0) {
      if (flag.find('=') == std::string::npos) {
        return Status::invalid_argument("unexpected argument '" + flag +
                                        "' (config overrides are KEY=VALUE)");
      }
      DICE_RETURN_IF_ERROR(check_override(flag));
      req.overrides.push_back(flag);
      continue;
    }
    bool inline_value = false;
    if (const auto eq = flag.find('='); eq != std::string::npos) {
      value = flag.substr(eq + 1);
      flag = flag.substr(0, eq);
      inline_value = true;
    }
    if (value_flags().count(flag) == 0) {
      return Status::invalid_argument("unknown option '" + args[i] + "'");
    }
    if (!inline_value) {
      if (i + 1 >= args.size()) return Status::invalid_argument(flag + ": missing its value");
      value = args[++i];
    }
    decoding_given = decoding_given || flag == "--decoding";
    DICE_RETURN_IF_ERROR(apply_flag(flag, value, &req, &pass_k_given));
  }
  for (const auto& [flag, field] :
       {std::pair<const char*, const std::string*>{"--model", &req.model},
        {"--problems", &req.problems},
        {"--out", &req.out}}) {
    if (field->empty()) return Status::invalid_argument(std::string(flag) + ": required");
  }
  if (req.samples > 1 && req.decoding == "greedy") {
    return Status::invalid_argument(
        "--samples " + std::to_string(req.samples) + " with " +
        (decoding_given ? "--decoding greedy" : "greedy decoding (the default)") +
        " gives identical answers: add --decoding sample (rollout.sampling)");
  }
  if (!pass_k_given) {
    req.pass_k = {1};
    if (req.samples > 1) req.pass_k.push_back(req.samples);
  }
  for (int k : req.pass_k) {
    if (k > req.samples) {
      return Status::invalid_argument("--pass-k: k = " + std::to_string(k) + " needs at least " +
                                      std::to_string(k) + " samples per problem (--samples " +
                                      std::to_string(req.samples) + ")");
    }
  }
  return req;
}

std::string usage_text() {
  return R"(Usage: dice-eval --model DIR --problems PATH --out DIR [options] [KEY=VALUE ...]

Evaluates a checkpoint the way the field reports it: every problem of PATH is answered by the
rollout service and every answer judged by the reward service, through dice's own services
(dice-cluster up + wait, an eval-only curriculum, learner.update_policy false), and the table
of Exec, fast_0, fast_1, fast_2 per level (over ALL problems of a level, as KernelBench
defines fast_p) with the geometric-mean speedup of the correct kernels is printed and written
to OUT/table.{md,json,csv} and into the reward log (run <id>, metrics eval/<kind>/...).

Required:
  --model DIR              the checkpoint (Hugging Face layout: config.json, *.safetensors)
  --problems PATH          the problem set, one of:
                             a KernelBench checkout (KernelBench/level1/ ... or level1/ ...)
                             a folder of KernelBench problem files <n>_<Name>.py (class Model,
                               get_inputs, get_init_inputs); its level from its name levelN,
                               else --level
                             a DICE-format task JSON file: end-to-end {idx|id, level,
                               pytorch_code} (end_to_end_kernel_generation_4000.json) or
                               infilling {id, pytorch_code, prefix, suffix}
                               (kernel_infilling_dev.json), judged as infilling tasks
                             a generated curriculum folder (dice-data curriculum --out): its
                               held-out split, heldout_infill.json and heldout_e2e.json
  --out DIR                the output folder (created); rerun with the same flags to resume

Problems:
  --level N                level of problems whose source names none
  --levels L1,L2           only these levels
  --per-level N            at most the first N problems of each level (0: all; default)
  --kind infill|end_to_end a task JSON file's kind (default: infill when its items have
                           prefix/suffix)

Decoding and judging:
  --decoding greedy|sample greedy (default): DICE's evaluation decoding, temperature 0 with
                           low_confidence_static remasking, block 4, 4 denoising steps;
                           sample: rollout.sampling of the config
  --max-new-tokens N       longest answer (default 4096, DICE's)
  --samples N              answers per problem (default 1; more than 1 needs --decoding sample)
  --pass-k K1,K2           pass@k columns, each k <= samples (default 1, and N when N > 1)
  --reward-mode MODE       full (a GPU compiles, runs and times each answer), compile_only or
                           extraction_only (no GPU: NO number then means a correct kernel).
                           Default: full with a GPU; without one compile_only where nvcc and
                           a Python with torch are found, else extraction_only, said loudly
  --no-timing              do not time correct answers (fast_1 and fast_2 are then 0)
  --noise-z Z              the noise check (below); 0 = KernelBench's plain speedup > p
                           (default 1.645: one-sided 95%)

Running:
  --config FILE            the base config (default: configs/local.yaml of this checkout with
                           a GPU, configs/toy.yaml without one)
  --id ID                  the evaluation's id (default: eval-<hash of the settings>); the
                           reward log runs are ID-a1, ID-a2, ... and the table is run ID
  --reward-log DIR         the reward log (default OUT/reward_log)
  --chunk-size N           problems per eval phase of an attempt (default 100)
  --retries N              new attempts for problems an attempt left without a verdict
                           (default 1); a rerun tries them again
  --status-interval S      seconds between status lines (default 30)
  --timeout S              stop the run after S seconds (0: never; default); rerun resumes
  --cluster FILE           the dice-cluster executable (default: found beside dice-eval)
  KEY=VALUE                config overrides (dice-config docs), applied after dice-eval's:
                           rollout.model_path, learner.update_policy=false, curriculum_file,
                           run.id, run.reward_log_path, cluster.local.state_dir, reward.mode,
                           reward.libraries=allowed, reward.tolerance.*=0.01 (DICE's),
                           and by default reward.correctness_trials=5, reward.timing.enabled,
                           reward.timing.trials=100, reward.timing.warmups=3 (KernelBench's),
                           rollout.sampling.max_new_tokens and, for greedy, block_size=4 and
                           denoising_steps=4
  -h, --help               this text

The noise check: the reward service times a correct kernel by the judge's clock (warm-up calls,
then timed rounds of back-to-back calls, each round clocked by the judge, the GPU to itself; the
reference timed once the kernel's processes are gone) and reports each side's mean and standard
deviation over the rounds. dice-eval counts an answer toward fast_p only when the speedup's
one-sided lower confidence bound exceeds p: S_low = S * exp(-z * sqrt(se_K^2 + se_R^2)), with
se_X = sd_X / (mean_X * sqrt(rounds - 1)) the standard error of the log of each mean. Fewer
than 2 timed rounds: not counted. table.json and table.csv also give fast_p_raw (S > p) and
how many speedups the check turned down.

Resuming: each attempt is a run <id>-a<N> of the reward log; on a rerun, the problems with a
verdict for every answer are skipped and only the rest asked again, in a new attempt. A run
still up from a dice-eval that was killed is followed to its end first. Ctrl-C stops the run's
services (the learner drains its step into the reward log; a second Ctrl-C stops waiting for
that) and exits 1. Overrides of cluster.* (placement, ports) may change between reruns; any
other setting must stay the same (OUT/evaluation.json).

Exit status: 0 the table was written; 1 a failure (the services, the reward log, a file, a
timeout; rerun to resume), or a GPU-only request on a machine without one; 2 bad arguments or
a bad problem set.
)";
}

}  // namespace dice::eval
