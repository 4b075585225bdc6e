// dice-data build-sft's report: what became of every input pair (keep_rule.h's outcome classes),
// counted by level and by class, and a histogram of the correct, timed pairs' speedups, raw and
// noise-checked, as JSON (report.json, for programs) and Markdown (report.md, for people).
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <vector>

#include "tools/dice-data/keep_rule.h"

namespace dice::data {

// One input pair in the report.
struct ReportedPair {
  std::string id;
  std::string level;         // "" when the input has none (shown as "-")
  std::string outcome;       // keep_rule.h's class, or "duplicate"
  std::string duplicate_of;  // for a duplicate: the id of the pair it repeats
  bool judged_now = false;   // judged by this run (else read back from the verdicts file)
  Decision decision;         // outcome, speedups (zero for a duplicate)
};

struct ReportSettings {
  std::string input;  // the input file, as given
  KeepRule rule;
  std::string form;  // the SFT items' form: end_to_end, infill or both
  // False when some pairs were only screened (no GPU here): no pair is kept, no SFT file written.
  bool measured = true;
  std::string screen_mode;  // the reward mode of the screen ("extraction_only"); "" when measured
  std::string no_gpu;       // why nothing could be measured here (the toolchain probe's error)
};

// A bin [low, high) of the histogram (high: infinity for the last), counting the timed pairs
// whose raw speedup, and whose noise-checked lower bound, falls in it.
struct SpeedupBin {
  double low = 0;
  double high = 0;
  std::size_t speedup = 0;
  std::size_t lower_bound = 0;
};

struct SftReport {
  ReportSettings settings;
  std::size_t pairs = 0;           // in the input
  std::size_t duplicates = 0;      // left out as the same pair as an earlier one
  std::size_t judged_now = 0;      // judged (or screened) by this run
  std::size_t judged_before = 0;   // verdicts read back from an earlier run
  std::size_t kept = 0;            // 0 when not measured: nothing is kept without a GPU
  std::size_t sft_items = 0;       // items written to the SFT file (set by the command)
  std::size_t infill_unsplit = 0;  // kept pairs without an infilling item (set by the command)
  std::map<std::string, std::size_t> by_outcome;
  std::map<std::string, std::map<std::string, std::size_t>> by_level;  // level -> outcome -> n
  std::vector<SpeedupBin> histogram;
  std::vector<ReportedPair> items;  // in input order
};

// The bins' edges: 0, 0.5, 1, 1.5, 2, 3, 5, 10 and `min_speedup` (so that the kept pairs fill
// whole bins of the lower bound), the last bin open-ended.
std::vector<SpeedupBin> speedup_histogram(const std::vector<ReportedPair>& pairs,
                                          double min_speedup);

// The counts of `pairs` under `settings`.
SftReport make_report(std::vector<ReportedPair> pairs, ReportSettings settings);

// The outcome classes in the order the report lists them: kept first, then the correct ones that
// were not kept, the failure classes by name, unmeasured and duplicate last.
std::vector<std::string> outcome_order(const std::map<std::string, std::size_t>& by_outcome);

std::string report_json(const SftReport& report);
std::string report_markdown(const SftReport& report);

}  // namespace dice::data
