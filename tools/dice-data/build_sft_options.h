// dice-data build-sft's options (its flags: cli.h; what it does: build_sft.h).
#pragma once

#include <string>

#include "tools/dice-data/keep_rule.h"

namespace dice::data {

// The SFT items written for each kept pair (learner/curriculum/sft_data.h reads both).
enum class SftForm {
  kEndToEnd,  // {id, level, pytorch_code, cuda_code}: the end_to_end prompt template
  kInfill,    // {id, level, pytorch_code, prefix, middle, suffix}: the infill template, the core
              // as DICE splits it (infill_split.h); a pair that does not split gets no item
  kBoth,      // both items for each pair (the infilling one's id ends in "/infill")
};

// "end_to_end", "infill", "both".
const char* sft_form_name(SftForm form);

// The reward pipeline as build-sft runs it: correctness, then timing, as dice-judge's flags of the
// same names set them (reward/judge/judge_main.cc).
struct SftJudgeOptions {
  std::string python = "python3";                 // Python with torch. Default: python3
  std::string nvcc = "/usr/local/cuda/bin/nvcc";  // Default: /usr/local/cuda/bin/nvcc
  // Build cache keyed by source hash. Default: runs/compile_cache
  std::string compile_cache = "runs/compile_cache";
  int compile_jobs = 0;        // compiles at once; 0: the number of cores. Default: 0
  int gpu_slots = 4;           // candidates checked at once on each GPU. Default: 4
  int correctness_trials = 5;  // input sets matched against the reference. Default: 5
  int timing_trials = 100;     // calls timed a side, over the judge's rounds. Default: 100
  int timeout_seconds = 300;   // per candidate's evaluation. Default: 300
};

struct BuildSftOptions {
  std::string input;                  // pairs: a JSON array or JSON Lines (sft_pairs.h). Required
  std::string out_dir;                // verdicts.jsonl, sft.json, report.json, report.md. Required
  KeepRule rule;                      // min_speedup (default 2) and noise_z (default 1.645)
  SftForm form = SftForm::kEndToEnd;  // Default: end_to_end
  SftJudgeOptions judge;
};

}  // namespace dice::data
