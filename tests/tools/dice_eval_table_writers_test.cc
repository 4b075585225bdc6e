// tools/dice-eval/table_writers.h: the table as JSON, CSV and Markdown, and the warning every
// form carries when the reward mode judged no correctness.
#include "tools/dice-eval/table_writers.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <sstream>

namespace dice::eval {
namespace {

TableMeta meta(const std::string& mode) {
  TableMeta m;
  m.evaluation_id = "eval-test";
  m.model = "/models/SDAR-4B-Chat";
  m.problem_set = "/data/KernelBench";
  m.problem_form = "kernelbench";
  m.reward_mode = mode;
  m.decoding = "greedy (temperature 0, low_confidence_static, block 4, 4 steps, 4096 new tokens)";
  m.samples = 4;
  m.pass_k = {1, 4};
  m.runs = {"eval-test-a1", "eval-test-a2"};
  m.weights_checksums = {"00000000000000ab"};
  m.created_utc = "2026-12-03T10:00:00Z";
  return m;
}

EvalTable table() {
  TableRow one;
  one.level = "1";
  one.problems = 100;
  one.exec = one.fast_0 = 0.4;
  one.fast_1 = 0.09;
  one.fast_2 = 0.05;
  one.fast_1_raw = 0.1;
  one.noise_rejected_1 = 1;
  one.geo_mean_speedup = 1.2345;
  one.timed = 40;
  one.compiled = 0.7;
  one.rewarded = 0.4;
  one.pass_at_k = {{1, 0.4}, {4, 0.55}};
  one.answers = 400;
  one.own_kernels_only.exec = one.own_kernels_only.fast_0 = 0.3;
  one.own_kernels_only.fast_1 = 0.06;
  one.own_kernels_only.fast_2 = 0.02;
  one.own_kernels_only.geo_mean_speedup = 1.1;
  one.own_kernels_only.timed = 30;
  TableRow all = one;
  all.level = kAllLevels;
  EvalTable t;
  t.rows = {one, all};
  return t;
}

TEST(DiceEvalTableWritersTest, JsonHoldsTheMetaAndEveryRow) {
  const boost::json::value root = boost::json::parse(table_json(meta("full"), table()));
  const auto& o = root.as_object();
  EXPECT_EQ(o.at("evaluation").as_string(), "eval-test");
  EXPECT_EQ(o.at("reward_mode").as_string(), "full");
  EXPECT_TRUE(o.at("correctness_judged").as_bool());
  EXPECT_FALSE(o.contains("warning"));
  EXPECT_EQ(o.at("runs").as_array().size(), 2u);
  EXPECT_DOUBLE_EQ(o.at("noise_check").as_object().at("z").as_double(), kDefaultNoiseZ);
  const auto& rows = o.at("rows").as_array();
  ASSERT_EQ(rows.size(), 2u);
  const auto& row = rows[0].as_object();
  EXPECT_EQ(row.at("kind").as_string(), "end_to_end");
  EXPECT_EQ(row.at("level").as_string(), "1");
  EXPECT_EQ(row.at("problems").as_int64(), 100);
  EXPECT_DOUBLE_EQ(row.at("fast_1").as_double(), 0.09);
  EXPECT_DOUBLE_EQ(row.at("fast_1_raw").as_double(), 0.1);
  EXPECT_DOUBLE_EQ(row.at("pass_at_k").as_object().at("4").as_double(), 0.55);
  EXPECT_DOUBLE_EQ(row.at("own_kernels_only").as_object().at("exec").as_double(), 0.3);
  EXPECT_EQ(o.at("judging").as_object().at("libraries").as_string(), "allowed");
  EXPECT_DOUBLE_EQ(o.at("judging").as_object().at("tolerance").as_double(), 0.01);
  EXPECT_EQ(rows[1].as_object().at("level").as_string(), "all");

  const boost::json::value cpu = boost::json::parse(table_json(meta("extraction_only"), table()));
  EXPECT_FALSE(cpu.as_object().at("correctness_judged").as_bool());
  EXPECT_NE(std::string(cpu.as_object().at("warning").as_string()).find("NO number"),
            std::string::npos);
}

TEST(DiceEvalTableWritersTest, CsvHasAHeaderAndOneCrlfLinePerRow) {
  const std::string csv = table_csv(meta("compile_only"), table());
  std::vector<std::string> lines;
  std::size_t start = 0;
  for (std::size_t end; (end = csv.find("\r\n", start)) != std::string::npos; start = end + 2) {
    lines.push_back(csv.substr(start, end - start));
  }
  EXPECT_EQ(start, csv.size()) << "every line ends in CRLF";
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[0],
            "kind,level,problems,exec,fast_0,fast_1,fast_2,geo_mean_speedup,timed,compiled,"
            "rewarded,fast_1_raw,fast_2_raw,noise_rejected_1,noise_rejected_2,incomplete,"
            "answers,pass_at_1,pass_at_4,reward_mode,own_kernels_exec,own_kernels_fast_1,"
            "own_kernels_fast_2,own_kernels_geo_mean_speedup,own_kernels_timed");
  EXPECT_EQ(lines[1],
            "end_to_end,1,100,0.4,0.4,0.09,0.05,1.2345,40,0.7,0.4,0.1,0,1,0,0,400,0.4,0.55,"
            "compile_only,0.3,0.06,0.02,1.1,30");
  EXPECT_EQ(lines[2].substr(0, 15), "end_to_end,all,");
}

TEST(DiceEvalTableWritersTest, MarkdownIsThePapersTableInPercent) {
  const std::string md = table_markdown(meta("full"), table());
  EXPECT_NE(md.find("| kind | level | problems | Exec % | fast_0 % | fast_1 % | fast_2 % | "
                    "geo-mean speedup | pass@1 % | pass@4 % | compiled % |"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("| end_to_end | 1 | 100 | 40.0 | 40.0 | 9.0 | 5.0 | 1.23x (40) | 40.0 | "
                    "55.0 | 70.0 |"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("| end_to_end | **all** | 100 | **40.0** |"), std::string::npos) << md;
  // Both semantics side by side: DICE's and KernelBench's (libraries allowed, their tolerance),
  // then own kernels only.
  EXPECT_NE(md.find("| compiled % | own kernels Exec % | own kernels fast_1 % | "
                    "own kernels fast_2 % |\n|---|---|---|---|---|---|---|---|---|---|---|---|"
                    "---|---|\n"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("| 70.0 | 30.0 | 6.0 | 2.0 |"), std::string::npos) << md;
  EXPECT_NE(md.find("(reward.libraries: allowed), atol = rtol = 0.01"), std::string::npos) << md;
  EXPECT_NE(md.find("over ALL problems"), std::string::npos);
  EXPECT_NE(md.find("turned down 1 answer speedup"), std::string::npos) << md;
  EXPECT_EQ(md.find("NOT A MEASURE"), std::string::npos);

  const std::string cpu = table_markdown(meta("extraction_only"), table());
  EXPECT_NE(cpu.find("> **NOT A MEASURE OF CORRECT KERNELS.**"), std::string::npos) << cpu;
  EXPECT_NE(cpu.find("NO number in this table means a correct kernel"), std::string::npos);
  EXPECT_NE(cpu.find("rewarded % (extraction_only) |"), std::string::npos) << cpu;
}

TEST(DiceEvalTableWritersTest, MissingVerdictsAndChangedWeightsAreCalledOut) {
  TableMeta m = meta("full");
  m.weights_checksums.push_back("00000000000000cd");
  EvalTable t = table();
  t.rows[0].incomplete = 3;
  const std::string md = table_markdown(m, t);
  EXPECT_NE(md.find("3 problem(s) lack a verdict"), std::string::npos) << md;
  EXPECT_NE(md.find("2 different weights"), std::string::npos) << md;
}

}  // namespace
}  // namespace dice::eval
