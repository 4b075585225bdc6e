// dice-judge's input (reward/judge/judge_items.h) and output (reward/judge/judge.h): every
// malformed input is named by file, item and field; the splice and the dumped sources are what the
// pipeline evaluates.
#include <filesystem>
#include <fstream>
#include <sstream>

#include <capnp/message.h>
#include <gtest/gtest.h>

#include "common/json/fields.h"
#include "common/remove_tree.h"
#include "reward/judge/judge.h"

namespace dice {
namespace {

std::string error_of(const std::string& text) {
  auto items = parse_judge_items(text, "items.json");
  return items.ok() ? "ok" : items.status().message();
}

TEST(JudgeItemsTest, MalformedInputIsNamed) {
  EXPECT_NE(error_of("[{").find("items.json: not JSON"), std::string::npos) << error_of("[{");
  EXPECT_EQ(error_of("{}"), "items.json: expected a JSON array of items");
  EXPECT_EQ(error_of("[3]"), "items.json: item 0: not a JSON object");
  EXPECT_EQ(error_of(R"([{"pytorch_code": "x"}])"), "items.json: item 0: \"id\" is missing");
  EXPECT_EQ(error_of(R"([{"id": 1.5}])"),
            "items.json: item 0: \"id\" must be a non-empty string or an integer");
  EXPECT_EQ(error_of(R"([{"id": 1, "pytorch_code": "x", "cuda_code": "y"}, {"id": "b"}])"),
            "items.json: item 1 (id b): \"pytorch_code\" is missing");
  EXPECT_EQ(error_of(R"([{"id": 7, "pytorch_code": "x", "prefix": "p", "middle": "m"}])"),
            "items.json: item 0 (id 7): \"suffix\" is missing");
  EXPECT_EQ(
      error_of(R"([{"id": 7, "pytorch_code": "x", "middle": 3, "prefix": "", "suffix": ""}])"),
      "items.json: item 0 (id 7): \"middle\" is not a string");
  EXPECT_EQ(error_of(R"([{"id": 7, "pytorch_code": "x"}])"),
            "items.json: item 0 (id 7): no candidate: give \"prefix\"/\"middle\"/\"suffix\", "
            "\"cuda_code\" or \"candidate\"");
  auto missing = load_judge_items("/nonexistent/items.json");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().message(), "/nonexistent/items.json: cannot open the items file");
}

TEST(JudgeItemsTest, ShapeVariantsAreReadAndMalformedOnesNamed) {
  auto items = parse_judge_items(
      R"([{"id": 1, "pytorch_code": "r", "candidate": "c",
           "shape_variants": [{"batch_size": 3}, {"batch_size": 1, "dim": 129}]}])",
      "items.json");
  ASSERT_TRUE(items.ok()) << items.status().to_string();
  const ShapeVariant first{{"batch_size", 3}}, second{{"batch_size", 1}, {"dim", 129}};
  EXPECT_EQ((*items)[0].shape_variants, (std::vector<ShapeVariant>{first, second}));
  const std::string item = R"([{"id": 1, "pytorch_code": "r", "candidate": "c", )";
  EXPECT_EQ(error_of(item + R"("shape_variants": {"n": 3}}])"),
            "items.json: item 0 (id 1): \"shape_variants\" must be an array of objects");
  EXPECT_EQ(error_of(item + R"("shape_variants": [{}]}])"),
            "items.json: item 0 (id 1): shape_variants[0]: must be a non-empty object of size "
            "-> integer");
  EXPECT_EQ(error_of(item + R"("shape_variants": [{"n": 2}, {"n": 1.5}]}])"),
            "items.json: item 0 (id 1): shape_variants[1]: \"n\" must be an integer, got 1.5E0");
  EXPECT_EQ(error_of(item + R"("shape_variants": [{"2n": 2}]}])"),
            "items.json: item 0 (id 1): shape_variants[0]: \"2n\" is not a Python identifier");
}

TEST(JudgeItemsTest, InfillAndWholeFileItems) {
  auto items = parse_judge_items(R"([
    {"id": 12, "pytorch_code": "ref", "prefix": "import torch\n", "middle": "core = 1",
     "suffix": "\nclass ModelNew: pass\n", "cuda_code": "ignored"},
    {"id": "e2e-1", "pytorch_code": "ref", "candidate": "import torch\nx = 1\n"},
    {"id": "e2e-2", "pytorch_code": "ref", "cuda_code": "import torch\ny = 2\n"}])",
                                 "items.json");
  ASSERT_TRUE(items.ok()) << items.status().to_string();
  ASSERT_EQ(items->size(), 3u);
  EXPECT_EQ((*items)[0].id, "12");
  EXPECT_TRUE((*items)[0].infill);
  EXPECT_EQ((*items)[0].variant, "original");
  auto spliced = judged_source((*items)[0]);
  ASSERT_TRUE(spliced.ok()) << spliced.status().to_string();
  // The core keeps its own line end; the suffix starts with another.
  EXPECT_EQ(spliced.value(), "import torch\ncore = 1\n\nclass ModelNew: pass\n");
  EXPECT_FALSE((*items)[1].infill);
  EXPECT_EQ(judged_source((*items)[1]).value(), "import torch\nx = 1\n");
  EXPECT_EQ(judged_source((*items)[2]).value(), "import torch\ny = 2\n");
}

TEST(JudgeItemsTest, DumpSourcesWritesManifestAndFiles) {
  auto items = parse_judge_items(
      R"([{"id": "a\"1", "pytorch_code": "ref a", "candidate": "import torch\n"}])", "items.json");
  ASSERT_TRUE(items.ok());
  const auto dir = std::filesystem::temp_directory_path() / "dice-judge-dump-test";
  ASSERT_TRUE(remove_tree(dir).ok());
  ASSERT_TRUE(dump_sources(items.value(), dir.string()).ok());
  std::ifstream manifest(dir / "manifest.jsonl");
  std::string line;
  ASSERT_TRUE(std::getline(manifest, line));
  auto doc = parse_json(line, "manifest");
  ASSERT_TRUE(doc.ok()) << line;
  EXPECT_EQ(json_string(doc.value(), "id"), "a\"1");
  EXPECT_EQ(json_string(doc.value(), "variant"), "original");
  std::ifstream candidate(dir / json_string(doc.value(), "candidate"));
  std::stringstream text;
  text << candidate.rdbuf();
  EXPECT_EQ(text.str(), "import torch\n");
  EXPECT_TRUE(remove_tree(dir).ok());
}

TEST(JudgeProgressTest, EveryIntervalAndAtTheEnd) {
  JudgeProgress progress;  // every 10 s
  EXPECT_FALSE(progress.due(1, 60, 3.0));
  EXPECT_TRUE(progress.due(5, 60, 10.0));
  EXPECT_FALSE(progress.due(7, 60, 15.0));  // 5 s since the last line
  EXPECT_TRUE(progress.due(9, 60, 20.5));
  EXPECT_TRUE(progress.due(60, 60, 21.0));  // the last one is always reported
  // The rate so far: 10 of 40 in 30 s leaves 30 at 3 s each.
  EXPECT_DOUBLE_EQ(JudgeProgress::eta_seconds(10, 40, 30.0), 90.0);
  EXPECT_DOUBLE_EQ(JudgeProgress::eta_seconds(0, 40, 30.0), -1.0);
  EXPECT_DOUBLE_EQ(JudgeProgress::eta_seconds(40, 40, 30.0), 0.0);
}

TEST(JudgeItemsTest, VerdictLineIsJson) {
  JudgeItem item;
  item.id = "6995";
  item.variant = "wrong_value";
  item.edit = "line 3: out[i] = v -> value * 1.5 + 1";
  capnp::MallocMessageBuilder message;
  auto verdict = message.initRoot<schema::Verdict>();
  verdict.setCompiled(true);
  verdict.setFailure(schema::FailureClass::INCORRECT);
  verdict.setLogExcerpt("max error 0.5\n\"quoted\"");
  verdict.getTimings().setCompileSeconds(1.5f);
  verdict.setSpeedup(2.0f);
  auto finding = verdict.initFindings(1)[0];
  finding.setCheck("kernel-not-launched");
  finding.setFatal(true);
  const std::string line = verdict_json(item, verdict.asReader(), true);
  auto doc = parse_json(line, "verdict");
  ASSERT_TRUE(doc.ok()) << line;
  EXPECT_EQ(json_string(doc.value(), "failure"), "incorrect");
  EXPECT_EQ(json_string(doc.value(), "variant"), "wrong_value");
  EXPECT_TRUE(json_bool(doc.value(), "compiled"));
  EXPECT_FALSE(json_bool(doc.value(), "correct", true));
  EXPECT_EQ(json_number(doc.value(), "compile_seconds"), 1.5);
  EXPECT_TRUE(json_is_null(doc.value(), "speedup"));  // not correct: no speedup
  EXPECT_EQ(json_string(doc.value(), "log_excerpt"), "max error 0.5\n\"quoted\"");
  EXPECT_NE(line.find("\"check\": \"kernel-not-launched\""), std::string::npos);
  EXPECT_TRUE(json_is_null(doc.value(), "timing_trials"));
}

TEST(JudgeItemsTest, TimedVerdictLineHasWhatANoiseCheckNeeds) {
  JudgeItem item;
  item.id = "7";
  capnp::MallocMessageBuilder message;
  auto verdict = message.initRoot<schema::Verdict>();
  verdict.setCompiled(true);
  verdict.setCorrect(true);
  verdict.setSpeedup(2.5f);
  auto timings = verdict.getTimings();
  timings.setKernelMsMean(0.004f);
  timings.setKernelMsStd(0.02f);
  timings.setReferenceMsMean(0.01f);
  timings.setReferenceMsStd(0.002f);
  timings.setTimingTrials(99);
  auto doc = parse_json(verdict_json(item, verdict.asReader(), true), "verdict");
  ASSERT_TRUE(doc.ok());
  EXPECT_NEAR(json_number(doc.value(), "speedup"), 2.5, 1e-6);
  EXPECT_NEAR(json_number(doc.value(), "kernel_ms"), 0.004, 1e-9);
  EXPECT_NEAR(json_number(doc.value(), "kernel_ms_std"), 0.02, 1e-8);
  EXPECT_NEAR(json_number(doc.value(), "reference_ms"), 0.01, 1e-9);
  EXPECT_NEAR(json_number(doc.value(), "reference_ms_std"), 0.002, 1e-9);
  EXPECT_EQ(json_number(doc.value(), "timing_trials"), 99);
  // Untimed (timing off): no speedup and no spread, even for a correct kernel.
  doc = parse_json(verdict_json(item, verdict.asReader(), false), "verdict");
  ASSERT_TRUE(doc.ok());
  for (const char* key : {"speedup", "kernel_ms_std", "reference_ms_std", "timing_trials"})
    EXPECT_TRUE(json_is_null(doc.value(), key)) << key;
}

// The summary line carries how failing builds ended early, beside the tiers' fallbacks: what a
// run on the RL candidates reads to see whether their compile errors cost one compile or more.
TEST(JudgeItemsTest, SummaryLineCountsBuildsThatEndedEarly) {
  JudgeSummary summary;
  summary.candidates = 9;
  summary.own_error_builds = 3;
  summary.units_not_compiled = 2;
  summary.split_fallbacks = 4;
  const std::string line = summary_json(summary);
  auto doc = parse_json(line, "summary");
  ASSERT_TRUE(doc.ok()) << line;
  EXPECT_EQ(json_number(doc.value(), "candidates"), 9);
  EXPECT_EQ(json_number(doc.value(), "own_error_builds"), 3);
  EXPECT_EQ(json_number(doc.value(), "units_not_compiled"), 2);
  EXPECT_EQ(json_number(doc.value(), "split_fallbacks"), 4);
}

}  // namespace
}  // namespace dice
