// dice-data build-sft's report (tools/dice-data/sft_report.h): counts by level and outcome, the
// histogram of raw and noise-checked speedups, and both renderings.
#include "tools/dice-data/sft_report.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <limits>
#include <string>
#include <vector>

#include "common/json/parse_text.h"

namespace dice::data {
namespace {

namespace json = boost::json;

ReportedPair pair(const std::string& id, const std::string& level, const std::string& outcome,
                  double speedup = 0, double low = 0) {
  ReportedPair p;
  p.id = id;
  p.level = level;
  p.outcome = outcome;
  p.judged_now = id != "old";
  p.decision.outcome = outcome;
  p.decision.kept = outcome == "kept";
  p.decision.timed = speedup > 0;
  p.decision.speedup = speedup;
  p.decision.speedup_low = low;
  if (outcome == "duplicate") p.duplicate_of = "a";
  return p;
}

// Two levels and a pair without one: kept, noisy, slow, failures, a duplicate.
std::vector<ReportedPair> sample() {
  return {pair("a", "1", "kept", 3.2, 2.9),   pair("b", "1", "noisy", 2.5, 1.09),
          pair("c", "1", "slow", 1.2, 1.1),   pair("d", "2", "compileError"),
          pair("e", "2", "incorrect"),        pair("f", "2", "kept", 12.0, 11.5),
          pair("a2", "1", "duplicate"),       pair("old", "2", "kept", 2.1, 2.0),
          pair("g", "", "untimed", 0.0, 0.0), pair("h", "2", "incorrect")};
}

TEST(DiceDataSftReportTest, CountsByLevelAndOutcome) {
  ReportSettings settings;
  settings.input = "pairs.json";
  settings.form = "end_to_end";
  const SftReport r = make_report(sample(), settings);
  EXPECT_EQ(r.pairs, 10u);
  EXPECT_EQ(r.duplicates, 1u);
  EXPECT_EQ(r.kept, 3u);
  EXPECT_EQ(r.judged_now, 8u);
  EXPECT_EQ(r.judged_before, 1u);
  EXPECT_EQ(r.by_outcome.at("kept"), 3u);
  EXPECT_EQ(r.by_outcome.at("incorrect"), 2u);
  EXPECT_EQ(r.by_level.at("1").at("kept"), 1u);
  EXPECT_EQ(r.by_level.at("1").at("duplicate"), 1u);
  EXPECT_EQ(r.by_level.at("2").at("kept"), 2u);
  EXPECT_EQ(r.by_level.at("2").at("incorrect"), 2u);
  EXPECT_EQ(r.by_level.at("").at("untimed"), 1u);
  EXPECT_EQ(outcome_order(r.by_outcome),
            (std::vector<std::string>{"kept", "noisy", "slow", "untimed", "compileError",
                                      "incorrect", "duplicate"}));
}

TEST(DiceDataSftReportTest, HistogramOfRawAndNoiseCheckedSpeedups) {
  const std::vector<SpeedupBin> bins = speedup_histogram(sample(), 2.0);
  ASSERT_EQ(bins.size(), 8u);  // 0, 0.5, 1, 1.5, 2, 3, 5, 10, the last open
  EXPECT_EQ(bins.back().low, 10);
  EXPECT_EQ(bins.back().high, std::numeric_limits<double>::infinity());
  auto count = [&](double low, bool raw) {
    for (const SpeedupBin& b : bins)
      if (b.low == low) return raw ? b.speedup : b.lower_bound;
    ADD_FAILURE() << "no bin at " << low;
    return std::size_t{0};
  };
  // Raw: 1.2 | 2.1, 2.5 | 3.2 | 12. Lower bounds: 1.09, 1.1 | 2.0, 2.9 | 11.5. "untimed" is out.
  EXPECT_EQ(count(1, true), 1u);
  EXPECT_EQ(count(2, true), 2u);
  EXPECT_EQ(count(3, true), 1u);
  EXPECT_EQ(count(10, true), 1u);
  EXPECT_EQ(count(1, false), 2u);
  EXPECT_EQ(count(2, false), 2u);  // a bound of exactly 2.0 falls in [2, 3)
  EXPECT_EQ(count(10, false), 1u);
  std::size_t raw = 0, bound = 0;
  for (const SpeedupBin& b : bins) raw += b.speedup, bound += b.lower_bound;
  EXPECT_EQ(raw, 5u);
  EXPECT_EQ(bound, 5u);
  // Another threshold becomes an edge, so the kept pairs fill whole bins.
  const std::vector<SpeedupBin> at_2_5 = speedup_histogram(sample(), 2.5);
  ASSERT_EQ(at_2_5.size(), 9u);
  EXPECT_EQ(at_2_5[5].low, 2.5);
  EXPECT_EQ(at_2_5[5].lower_bound, 1u);  // 2.9
}

TEST(DiceDataSftReportTest, JsonAndMarkdown) {
  ReportSettings settings;
  settings.input = "pairs.json";
  settings.form = "end_to_end";
  SftReport r = make_report(sample(), settings);
  r.sft_items = 3;
  boost::system::error_code ec;
  std::string position;
  const json::value v = parse_json_text(report_json(r), &ec, &position);
  ASSERT_FALSE(ec) << position;
  const json::object& o = v.get_object();
  EXPECT_EQ(o.at("kept").as_int64(), 3);
  EXPECT_EQ(o.at("pairs").as_int64(), 10);
  EXPECT_TRUE(o.at("measured").as_bool());
  EXPECT_EQ(o.at("levels").at("-").at("untimed").as_int64(), 1);
  EXPECT_EQ(o.at("levels").at("2").at("incorrect").as_int64(), 2);
  EXPECT_EQ(o.at("histogram").as_array().size(), 8u);
  EXPECT_TRUE(o.at("histogram").as_array().back().at("high").is_null());
  const json::array& items = o.at("items").as_array();
  ASSERT_EQ(items.size(), 10u);
  EXPECT_EQ(items[1].at("outcome").as_string(), "noisy");
  EXPECT_DOUBLE_EQ(items[1].at("speedup_lower_bound").as_double(), 1.09);
  EXPECT_EQ(items[6].at("duplicate_of").as_string(), "a");

  const std::string md = report_markdown(r);
  for (const char* want : {
           "Kept **3** of 10 pairs (1 duplicates left out; 8 judged by this run, 1 read back",
           "| level | pairs | kept | noisy | slow | untimed | compileError | incorrect | "
           "duplicate |",
           "| 1 | 4 | 1 | 1 | 1 | 0 | 0 | 0 | 1 |",
           "| 2 | 5 | 2 | 0 | 0 | 0 | 1 | 2 | 0 |",
           "| - | 1 | 0 | 0 | 0 | 1 | 0 | 0 | 0 |",
           "| all | 10 | 3 | 1 | 1 | 1 | 1 | 2 | 1 |",
           "| 2 - 3 | 2 |",
           "| >= 10 | 1 |",
           "## Dropped by the noise check",
           "| b | 1 | 2.5 | 1.09 |",
           "SFT file: 3 items, form end_to_end.",
       }) {
    EXPECT_NE(md.find(want), std::string::npos) << want << "\nin:\n" << md;
  }
  EXPECT_EQ(md.find("No GPU"), std::string::npos);
}

TEST(DiceDataSftReportTest, ANoGpuReportSaysNothingWasMeasured) {
  ReportSettings settings;
  settings.input = "pairs.json";
  settings.measured = false;
  settings.screen_mode = "extraction_only";
  settings.no_gpu = "nvcc not found";
  const SftReport r = make_report({pair("a", "1", "unmeasured"), pair("b", "1", "staticCheck"),
                                   pair("old", "1", "kept", 3.0, 2.5)},
                                  settings);
  const std::string md = report_markdown(r);
  EXPECT_NE(md.find("**No GPU here: nothing is kept.** nvcc not found. The 2 pairs left to "
                    "judge were only screened (extraction_only: extraction and static checks): 1 "
                    "of them fail before the GPU, the other 1 are unmeasured. No SFT file was "
                    "written. Of the 1 pairs judged before (on a GPU), 1 pass the rule"),
            std::string::npos)
      << md;
  EXPECT_EQ(md.find("SFT file:"), std::string::npos);
  EXPECT_EQ(r.kept, 0u);
  const std::string js = report_json(r);
  EXPECT_NE(js.find("\"measured\": false"), std::string::npos) << js;
  EXPECT_NE(js.find("\"no_gpu\": \"nvcc not found\""), std::string::npos);
}

}  // namespace
}  // namespace dice::data
