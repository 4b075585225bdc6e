// dice-eval's command line (usage_text() has it all):
//   dice-eval --model DIR --problems PATH --out DIR [options] [KEY=VALUE ...]
// Flags as "--flag value" or "--flag=value"; KEY=VALUE arguments are config overrides, applied
// after dice-eval's own.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "tasks/answer_scoring.h"
#include "tools/dice-eval/problem_set.h"

namespace dice::eval {

struct EvalRequest {
  bool help = false;                  // --help / -h anywhere: print usage_text() and exit 0
  std::string model;                  // --model: the checkpoint (Hugging Face layout)
  std::string problems;               // --problems: the problem set (problem_set.h)
  std::string out;                    // --out: the output folder
  ProblemSetOptions problem_options;  // --level, --kind, --levels, --per-level
  int samples = 1;                    // --samples: answers per problem
  std::vector<int> pass_k;            // --pass-k: default 1 (and samples when > 1)
  std::string decoding = "greedy";    // --decoding greedy|sample
  int max_new_tokens = 4096;          // --max-new-tokens
  std::string reward_mode;            // --reward-mode; "" = by the machine (evaluation.h)
  double noise_z = kDefaultNoiseZ;    // --noise-z
  bool timing = true;                 // --no-timing clears it
  std::string config;                 // --config; "" = configs/local.yaml (GPU) or toy.yaml (none)
  std::string id;                     // --id; "" = derived from the settings
  std::string reward_log;             // --reward-log; "" = OUT/reward_log
  int chunk_size = 100;               // --chunk-size: problems per eval phase
  int retries = 1;                    // --retries: attempts after one that left problems unanswered
  double status_interval = 30;        // --status-interval: seconds between status lines
  double timeout = 0;                 // --timeout: seconds before dice-eval stops the run; 0 = none
  std::string cluster;                // --cluster: the dice-cluster executable; "" = found
  std::vector<std::string> overrides;  // KEY=VALUE
};

// The arguments after the program name. InvalidArgument naming the argument for anything
// unknown, missing, malformed or out of range, and for an override of a key dice-eval sets
// itself (naming the flag to use instead); main exits 2 on it.
Result<EvalRequest> parse_command_line(const std::vector<std::string>& args);

std::string usage_text();

}  // namespace dice::eval
