// dice-judge's core: a list of candidates (judge_items.h), optionally with broken variants of
// each (judge_variants.h), judged by the RewardPipeline, one JSON line per verdict:
//
//   {"id": "6995", "variant": "original", "compiled": true, "correct": true, "failure": "none",
//    "reward": 1, "findings": [{"check": "...", "detail": "...", "fatal": false}],
//    "compile_seconds": 41.2, "eval_seconds": 3.1, "speedup": 1.8, "kernel_ms": 0.05,
//    "reference_ms": 0.09, "kernel_ms_std": 0.002, "reference_ms_std": 0.003, "timing_trials": 99
//    (the six null unless timed and correct; the stds and trials are what a noise check of the
//    speedup needs: tasks/answer_scoring.h), "max_abs_error": 1e-06, "source_hash": "...",
//    "edit": "" (variants: what changed), "log_excerpt": "..." (at most 600 bytes)}
//
// tools/bench/reward/kernelbench/ writes the same format from KernelBench's own evaluation, so
// the two can be compared line by line (keyed by id and variant).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "common/status.h"
#include "reward/judge/judge_items.h"
#include "reward/pipeline.h"

namespace dice {

// `items` followed, when `with_broken` is set, by the broken variants of each item's spliced
// file (judged as whole files). Items whose file has no kernel store get none; their ids go to
// `without_variants`.
std::vector<JudgeItem> with_variants(const std::vector<JudgeItem>& items, bool with_broken,
                                     std::vector<std::string>* without_variants);

// The file the pipeline will evaluate for `item` (the splice for infilling), or the reason it
// will fail before that (the pipeline reports the same failure).
Result<std::string> judged_source(const JudgeItem& item);

// Writes each candidate's judged file and its reference under `dir`, and dir/manifest.jsonl
// with one line per candidate: {"id", "variant", "reference": "refs/<n>.py", "candidate":
// "candidates/<n>.<variant>.py"} (paths relative to dir). A candidate whose file cannot be
// built (see judged_source) gets "candidate": null and "error".
Status dump_sources(const std::vector<JudgeItem>& candidates, const std::string& dir);

struct JudgeSummary {
  size_t candidates = 0;
  size_t compiled = 0;
  size_t correct = 0;
  size_t cache_hits = 0;  // compiled with no compile time: every module came from the cache
  size_t variants = 0;
  size_t variants_correct = 0;  // broken variants judged correct: the judge (or the edit) missed
  double seconds = 0;           // wall clock of judging, all candidates
  // Before `seconds`: building the precompiled binding headers (Compiler::
  // prepare_binding_headers), as a worker's start does; 0 when not asked for.
  double prepare_seconds = 0;
  // Builds whose kernel file needed more than the lean torch headers, and more than the slim ones
  // (Compiler::lean_header_fallbacks, full_header_builds): what compile time is lost to retries.
  std::uint64_t lean_header_fallbacks = 0;
  std::uint64_t full_header_builds = 0;
  // Builds that could not be split into kernels without torch and host code in the binding
  // file, or whose split build failed (Compiler::split_fallbacks): they took the header tiers.
  std::uint64_t split_fallbacks = 0;
  // Split builds whose binding needed torch/types.h's headers after ATen's
  // (Compiler::aten_binding_fallbacks): one more binding compile each.
  std::uint64_t aten_binding_fallbacks = 0;
  // Compile errors decided in a light tier as the candidate's own (Compiler::own_error_builds),
  // and tiers after a failed one whose failed unit failed again, the other never compiled
  // (Compiler::units_not_compiled): how failing builds ended early.
  std::uint64_t own_error_builds = 0;
  std::uint64_t units_not_compiled = 0;

  double per_minute() const { return seconds > 0 ? 60.0 * candidates / seconds : 0; }
};

// When run_judge logs its progress ("judging" lines: done, rate, eta_s): every `interval_seconds`
// and when the last candidate is in.
struct JudgeProgress {
  double interval_seconds = 10;
  double last_report = 0;

  // True when a line is due at `seconds` into the run with `done` of `total` judged.
  bool due(size_t done, size_t total, double seconds);
  // Seconds left at the rate so far: 0 when all are done, -1 before the first is.
  static double eta_seconds(size_t done, size_t total, double seconds);
};

// Judges `candidates` with `threads` in flight (compiles overlap evaluations; the pipeline's own
// pools bound each) and calls `emit` with each verdict line as it completes (never two at once).
JudgeSummary run_judge(RewardPipeline& pipeline, const std::vector<JudgeItem>& candidates,
                       int threads, const std::function<void(const std::string&)>& emit);

// One verdict line (the format above); `timed`: the run measured speed.
std::string verdict_json(const JudgeItem& item, schema::Verdict::Reader verdict, bool timed);
// {"candidates": ..., "seconds": ..., "per_minute": ..., ...} on one line.
std::string summary_json(const JudgeSummary& summary);
// A JSON string literal for `text`.
std::string json_quote(std::string_view text);

}  // namespace dice
