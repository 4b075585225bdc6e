#include "tools/dice-data/sft_report.h"

#include <algorithm>
#include <boost/json.hpp>
#include <cstdio>
#include <limits>
#include <sstream>

#include "common/json/pretty_json.h"

namespace dice::data {
namespace {

namespace json = boost::json;

// Rows of the Markdown table of pairs dropped by the noise check before the rest are counted.
constexpr std::size_t kMaxNoisyListed = 50;
// The longest histogram bar, in characters.
constexpr std::size_t kBarWidth = 40;

constexpr const char* kFirst[] = {"kept", "noisy", "slow", "untimed", "zeroReward"};
constexpr const char* kLast[] = {"unmeasured", "duplicate"};

// What each outcome class means, for the Markdown report.
const std::map<std::string, std::string>& outcome_meanings() {
  static const std::map<std::string, std::string> kMeanings = {
      {"kept", "correct, and its noise-checked speedup is at least the threshold"},
      {"noisy",
       "correct, raw speedup at or above the threshold, but the noise-checked bound below it"},
      {"slow", "correct, raw speedup below the threshold"},
      {"untimed", "correct, but no speedup with 2 or more timed trials to bound its noise"},
      {"zeroReward", "correct, but a fatal finding zeroed its reward"},
      {"unmeasured", "screened without a GPU: no failure found, nothing run or timed"},
      {"duplicate", "the same pair as an earlier one once comments and white space are out"},
  };
  return kMeanings;
}

std::string number(double value, const char* format = "%.4g") {
  char text[64];
  std::snprintf(text, sizeof text, format, value);
  return text;
}

std::string level_name(const std::string& level) {
  return level.empty() ? "-" : level;
}

std::string bin_name(const SpeedupBin& bin) {
  if (bin.high == std::numeric_limits<double>::infinity()) return ">= " + number(bin.low);
  return number(bin.low) + " - " + number(bin.high);
}

std::string bar(std::size_t n, std::size_t most) {
  if (n == 0 || most == 0) return "";
  return std::string(std::max<std::size_t>(1, n * kBarWidth / most), '#');
}

json::object counts_json(const std::map<std::string, std::size_t>& counts) {
  json::object o;
  for (const std::string& outcome : outcome_order(counts)) o[outcome] = counts.at(outcome);
  return o;
}

}  // namespace

std::vector<std::string> outcome_order(const std::map<std::string, std::size_t>& by_outcome) {
  std::vector<std::string> order;
  auto is_listed = [](const std::string& name) {
    for (const char* f : kFirst)
      if (name == f) return true;
    for (const char* l : kLast)
      if (name == l) return true;
    return false;
  };
  for (const char* f : kFirst)
    if (by_outcome.count(f)) order.emplace_back(f);
  for (const auto& [name, n] : by_outcome)
    if (!is_listed(name)) order.push_back(name);
  for (const char* l : kLast)
    if (by_outcome.count(l)) order.emplace_back(l);
  return order;
}

std::vector<SpeedupBin> speedup_histogram(const std::vector<ReportedPair>& pairs,
                                          double min_speedup) {
  std::vector<double> edges = {0, 0.5, 1, 1.5, 2, 3, 5, 10};
  if (min_speedup > 0 && std::find(edges.begin(), edges.end(), min_speedup) == edges.end()) {
    edges.push_back(min_speedup);
    std::sort(edges.begin(), edges.end());
  }
  std::vector<SpeedupBin> bins;
  for (std::size_t i = 0; i < edges.size(); ++i) {
    SpeedupBin bin;
    bin.low = edges[i];
    bin.high = i + 1 < edges.size() ? edges[i + 1] : std::numeric_limits<double>::infinity();
    bins.push_back(bin);
  }
  auto bin_of = [&](double value) -> SpeedupBin& {
    for (std::size_t i = bins.size(); i-- > 0;)
      if (value >= bins[i].low) return bins[i];
    return bins.front();
  };
  for (const ReportedPair& pair : pairs) {
    if (!pair.decision.timed) continue;
    ++bin_of(pair.decision.speedup).speedup;
    ++bin_of(pair.decision.speedup_low).lower_bound;
  }
  return bins;
}

SftReport make_report(std::vector<ReportedPair> pairs, ReportSettings settings) {
  SftReport report;
  report.settings = std::move(settings);
  report.pairs = pairs.size();
  for (const ReportedPair& pair : pairs) {
    ++report.by_outcome[pair.outcome];
    ++report.by_level[pair.level][pair.outcome];
    if (pair.outcome == "duplicate") {
      ++report.duplicates;
      continue;
    }
    ++(pair.judged_now ? report.judged_now : report.judged_before);
    // Without a GPU nothing is kept, whatever earlier verdicts say (no SFT file is written).
    if (report.settings.measured) report.kept += pair.decision.kept;
  }
  report.histogram = speedup_histogram(pairs, report.settings.rule.min_speedup);
  report.items = std::move(pairs);
  return report;
}

std::string report_json(const SftReport& r) {
  json::object root;
  root["input"] = r.settings.input;
  root["measured"] = r.settings.measured;
  if (!r.settings.measured) {
    root["screen_mode"] = r.settings.screen_mode;
    root["no_gpu"] = r.settings.no_gpu;
    root["warning"] =
        "no GPU: pairs judged here were only screened (" + r.settings.screen_mode +
        "); correctness and speed were not measured, so no pair is kept and no SFT file written";
  }
  root["min_speedup"] = r.settings.rule.min_speedup;
  root["noise_z"] = r.settings.rule.noise_z;
  root["rule"] =
      "kept: correct and speedup_lower_bound >= min_speedup, where speedup_lower_bound = S * "
      "exp(-z * sqrt(se_log_k^2 + se_log_r^2)), se_log_x = sd_x / (mean_x * sqrt(n - 1)) "
      "(tasks/answer_scoring.h)";
  root["form"] = r.settings.form;
  root["pairs"] = r.pairs;
  root["duplicates"] = r.duplicates;
  root["judged_now"] = r.judged_now;
  root["judged_before"] = r.judged_before;
  root["kept"] = r.kept;
  root["sft_items"] = r.sft_items;
  root["infill_unsplit"] = r.infill_unsplit;
  root["outcomes"] = counts_json(r.by_outcome);
  json::object levels;
  for (const auto& [level, counts] : r.by_level) levels[level_name(level)] = counts_json(counts);
  root["levels"] = std::move(levels);
  json::array bins;
  for (const SpeedupBin& bin : r.histogram) {
    json::object b;
    b["low"] = bin.low;
    b["high"] = bin.high == std::numeric_limits<double>::infinity() ? json::value(nullptr)
                                                                    : json::value(bin.high);
    b["speedup"] = bin.speedup;
    b["lower_bound"] = bin.lower_bound;
    bins.push_back(std::move(b));
  }
  root["histogram"] = std::move(bins);
  json::array items;
  for (const ReportedPair& p : r.items) {
    json::object o;
    o["id"] = p.id;
    o["level"] = p.level;
    o["outcome"] = p.outcome;
    if (!p.duplicate_of.empty()) o["duplicate_of"] = p.duplicate_of;
    if (p.decision.timed) {
      o["speedup"] = p.decision.speedup;
      o["speedup_lower_bound"] = p.decision.speedup_low;
    }
    items.push_back(std::move(o));
  }
  root["items"] = std::move(items);
  return pretty_json(root);
}

std::string report_markdown(const SftReport& r) {
  std::ostringstream md;
  const KeepRule& rule = r.settings.rule;
  md << "# dice-data build-sft: " << r.settings.input << "\n\n";
  const std::string rule_text =
      "correct, and faster than eager PyTorch by at least " + number(rule.min_speedup) +
      "x on the noise-checked lower bound of the speedup (z = " + number(rule.noise_z) + ")";
  if (r.settings.measured) {
    md << "Kept **" << r.kept << "** of " << r.pairs << " pairs (" << r.duplicates
       << " duplicates left out; " << r.judged_now << " judged by this run, " << r.judged_before
       << " read back from earlier verdicts): " << rule_text << ". SFT file: " << r.sft_items
       << " items, form " << r.settings.form;
    if (r.infill_unsplit > 0) md << " (" << r.infill_unsplit << " kept pairs do not split)";
    md << ".";
  } else {
    std::size_t unmeasured = 0, passing = 0;
    for (const ReportedPair& p : r.items) {
      unmeasured += p.outcome == "unmeasured";
      passing += p.decision.kept;
    }
    md << "**No GPU here: nothing is kept.** " << r.settings.no_gpu << ". The " << r.judged_now
       << " pairs left to judge were only screened (" << r.settings.screen_mode
       << ": extraction and static checks): " << r.judged_now - unmeasured
       << " of them fail before the GPU, the other " << unmeasured
       << " are unmeasured. No SFT file was written. Of the " << r.judged_before
       << " pairs judged before (on a GPU), " << passing << " pass the rule (" << rule_text
       << ") and will be kept by a run on a GPU node. " << r.duplicates << " duplicates left out.";
  }
  md << "\n\n## Outcomes by level\n\n";
  const std::vector<std::string> columns = outcome_order(r.by_outcome);
  md << "| level | pairs |";
  for (const std::string& c : columns) md << " " << c << " |";
  md << "\n|---|---|";
  for (std::size_t i = 0; i < columns.size(); ++i) md << "---|";
  md << "\n";
  auto row = [&](const std::string& name, const std::map<std::string, std::size_t>& counts) {
    std::size_t total = 0;
    for (const auto& [outcome, n] : counts) total += n;
    md << "| " << name << " | " << total << " |";
    for (const std::string& c : columns) {
      const auto it = counts.find(c);
      md << " " << (it == counts.end() ? 0 : it->second) << " |";
    }
    md << "\n";
  };
  for (const auto& [level, counts] : r.by_level) row(level_name(level), counts);
  row("all", r.by_outcome);

  md << "\n## Speedups of the correct, timed pairs\n\n"
     << "Raw: the reference's mean time over the kernel's. Lower bound: the one-sided "
     << number(rule.noise_z) << "-sigma lower confidence bound of that ratio from both means, "
     << "their spreads and the number of timed trials (tasks/answer_scoring.h); a pair is "
     << "kept when it is at least " << number(rule.min_speedup) << ".\n\n"
     << "| speedup | raw | | lower bound | |\n|---|---|---|---|---|\n";
  std::size_t most = 0;
  for (const SpeedupBin& bin : r.histogram) most = std::max({most, bin.speedup, bin.lower_bound});
  for (const SpeedupBin& bin : r.histogram) {
    md << "| " << bin_name(bin) << " | " << bin.speedup << " | " << bar(bin.speedup, most) << " | "
       << bin.lower_bound << " | " << bar(bin.lower_bound, most) << " |\n";
  }

  md << "\n## Outcome classes\n\n";
  const auto& meanings = outcome_meanings();
  for (const std::string& c : columns) {
    const auto it = meanings.find(c);
    md << "- `" << c << "` (" << r.by_outcome.at(c)
       << "): " << (it != meanings.end() ? it->second : "the verdict's failure class") << "\n";
  }

  std::vector<const ReportedPair*> noisy;
  for (const ReportedPair& p : r.items)
    if (p.outcome == "noisy") noisy.push_back(&p);
  if (!noisy.empty()) {
    md << "\n## Dropped by the noise check\n\n| id | level | raw speedup | lower bound |\n"
       << "|---|---|---|---|\n";
    for (std::size_t i = 0; i < noisy.size() && i < kMaxNoisyListed; ++i) {
      md << "| " << noisy[i]->id << " | " << level_name(noisy[i]->level) << " | "
         << number(noisy[i]->decision.speedup) << " | " << number(noisy[i]->decision.speedup_low)
         << " |\n";
    }
    if (noisy.size() > kMaxNoisyListed)
      md << "\n... and " << noisy.size() - kMaxNoisyListed << " more (report.json lists all).\n";
  }
  return md.str();
}

}  // namespace dice::data
