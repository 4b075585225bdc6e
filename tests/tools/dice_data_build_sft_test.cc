// dice-data build-sft's command (tools/dice-data/build_sft.h) with its judge a test double
// (dice_data_pair_judge_test_double.h): which pairs it keeps, duplicates judged once, the SFT
// file as the learner's SFT reader reads it, resuming after a kill, a judge that dies, a changed
// input, and a machine without a GPU.
#include "tools/dice-data/build_sft.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "learner/curriculum/sft_data.h"
#include "tests/support/temp_dir.h"
#include "tests/tools/dice_data_pair_judge_test_double.h"
#include "tests/tools/dice_data_test_util.h"

namespace dice::data {
namespace {

namespace fs = std::filesystem;
namespace json = boost::json;
using schema::FailureClass;
using testing::failed;
using testing::PairJudgeTestDouble;
using testing::read_text;
using testing::timed;

// kCandidate with the kernel's constant set to `n`: a different pair for each n.
std::string candidate(int n) {
  std::string text = testing::kCandidate;
  text.replace(text.find("x[0] = 1"), 8, "x[0] = " + std::to_string(n));
  return text;
}

std::string reference(int n) {
  return "import torch\n\nclass Model(torch.nn.Module):\n    def forward(self, x):\n"
         "        return x * " +
         std::to_string(n) + "\n";
}

// "fast" again, with other comments and white space: the same pair.
std::string reformatted_fast() {
  std::string text = candidate(1);
  text.replace(text.find("# A kernel and its launcher"), 27, "# the kernel, reformatted");
  text.replace(text.find("{ x[0] = 1; }"), 13, "{\n    x[0] = 1;  // one\n}");
  return text;
}

json::object pair_json(const std::string& id, const std::string& level, int n,
                       const std::string& cuda_code = "") {
  return {{"id", id},
          {"level", level},
          {"pytorch_code", reference(n)},
          {"cuda_code", cuda_code.empty() ? candidate(n) : cuda_code}};
}

// Seven pairs whose verdicts the test double knows.
std::vector<json::object> sample_pairs() {
  return {pair_json("fast", "1", 1),   pair_json("noisy", "1", 2),
          pair_json("slow", "2", 3),   pair_json("wrong", "2", 4),
          pair_json("broken", "3", 5), pair_json("fast-copy", "1", 1, reformatted_fast()),
          pair_json("fast2", "3", 6)};
}

void set_sample_verdicts(PairJudgeTestDouble& judge) {
  judge.set("fast", timed(0.4, 0.004, 1.0, 0.01));      // 2.5x, tight: kept
  judge.set("noisy", timed(0.004, 0.02, 0.01, 0.002));  // 2.5x raw, launch-overhead noise
  judge.set("slow", timed(1.0, 0.01, 1.5, 0.01));       // 1.5x
  judge.set("wrong", failed(FailureClass::INCORRECT, true));
  judge.set("broken", failed(FailureClass::COMPILE_ERROR, false));
  judge.set("fast2", timed(0.1, 0.001, 1.0, 0.01));  // 10x: kept
}

class DiceDataBuildSftTest : public ::testing::Test {
 protected:
  DiceDataBuildSftTest() : dir_("dice-data-build-sft-test") {
    options_.input = dir_.sub("pairs.json");
    options_.out_dir = dir_.sub("out");
    write_pairs(sample_pairs());
    set_sample_verdicts(judge_);
  }

  void write_pairs(const std::vector<json::object>& pairs) {
    json::array a;
    for (const auto& p : pairs) a.push_back(p);
    std::ofstream(options_.input, std::ios::binary) << json::serialize(a);
  }

  // Runs the command with `judge` as its judge; the opener counts its calls.
  int run(PairJudge& judge) {
    std::ostringstream out, err;
    const int code = run_build_sft(
        options_,
        [&]() -> Result<std::unique_ptr<PairJudge>> {
          ++opened_;
          return std::unique_ptr<PairJudge>(std::make_unique<testing::BorrowedPairJudge>(judge));
        },
        out, err);
    out_ = out.str();
    err_ = err.str();
    return code;
  }

  std::string out_file(const std::string& name) const { return options_.out_dir + "/" + name; }

  std::vector<json::object> sft_items() const {
    return testing::json_items(read_text(out_file("sft.json")), "sft.json");
  }

  std::vector<std::string> verdict_lines() const {
    std::vector<std::string> lines;
    std::istringstream in(read_text(out_file("verdicts.jsonl")));
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    return lines;
  }

  testing_util::TempDir dir_;
  BuildSftOptions options_;
  PairJudgeTestDouble judge_;
  int opened_ = 0;
  std::string out_, err_;
};

TEST_F(DiceDataBuildSftTest, KeepsOnlyPairsFastBeyondTheNoise) {
  ASSERT_EQ(run(judge_), 0) << err_;
  // "fast-copy" repeats "fast" but for comments and white space: never judged.
  EXPECT_EQ(judge_.asked(),
            (std::vector<std::string>{"fast", "noisy", "slow", "wrong", "broken", "fast2"}));
  const auto items = sft_items();
  ASSERT_EQ(items.size(), 2u);
  EXPECT_EQ(testing::str(items[0], "id"), "fast");
  EXPECT_EQ(testing::str(items[0], "level"), "1");
  EXPECT_EQ(testing::str(items[0], "pytorch_code"), reference(1));
  EXPECT_EQ(testing::str(items[0], "cuda_code"), candidate(1));
  EXPECT_NEAR(items[0].at("speedup").as_double(), 2.5, 1e-4);
  EXPECT_GE(items[0].at("speedup_lower_bound").as_double(), 2.0);
  EXPECT_EQ(testing::str(items[1], "id"), "fast2");
  EXPECT_FALSE(items[0].contains("middle"));

  // Every judged pair's verdict, stamped with its pair's hash.
  const auto lines = verdict_lines();
  ASSERT_EQ(lines.size(), 6u);
  for (const std::string& line : lines)
    EXPECT_NE(line.find("\"pair_hash\": \""), std::string::npos);

  const json::value report = json::parse(read_text(out_file("report.json")));
  EXPECT_EQ(report.at("kept").as_int64(), 2);
  EXPECT_EQ(report.at("duplicates").as_int64(), 1);
  const json::object& outcomes = report.at("outcomes").as_object();
  for (const auto& [outcome, n] : std::map<std::string, int>{{"kept", 2},
                                                             {"noisy", 1},
                                                             {"slow", 1},
                                                             {"incorrect", 1},
                                                             {"compileError", 1},
                                                             {"duplicate", 1}})
    EXPECT_EQ(outcomes.at(outcome).as_int64(), n) << outcome;
  EXPECT_EQ(report.at("levels").at("1").at("duplicate").as_int64(), 1);
  EXPECT_EQ(report.at("levels").at("3").at("kept").as_int64(), 1);
  const json::array& reported = report.at("items").as_array();
  EXPECT_EQ(reported[5].at("outcome").as_string(), "duplicate");
  EXPECT_EQ(reported[5].at("duplicate_of").as_string(), "fast");
  EXPECT_NE(read_text(out_file("report.md")).find("| noisy | 1 | 2.5 |"), std::string::npos)
      << read_text(out_file("report.md"));
  EXPECT_NE(out_.find("kept 2 of 7 pairs"), std::string::npos) << out_;
}

TEST_F(DiceDataBuildSftTest, TheLearnersSftReaderReadsTheFile) {
  options_.form = SftForm::kBoth;
  ASSERT_EQ(run(judge_), 0) << err_;
  std::map<TaskKind, PromptTemplate> templates;
  for (TaskKind kind : {TaskKind::kEndToEnd, TaskKind::kInfill}) {
    auto t = PromptTemplate::builtin(kind);
    ASSERT_TRUE(t.ok()) << t.status().to_string();
    templates.emplace(kind, std::move(t).value());
  }
  auto tokenizer =
      tokenizer::Tokenizer::load(std::string(DICE_TOKENIZER_TESTDATA) + "/tiny_tokenizer.json");
  ASSERT_TRUE(tokenizer.ok()) << tokenizer.status().to_string();
  auto data = load_sft_data(out_file("sft.json"), &*tokenizer, templates, /*max_length=*/1 << 20,
                            /*vocab_size=*/1 << 20, /*mask_token_id=*/-1);
  ASSERT_TRUE(data.ok()) << data.status().to_string();
  ASSERT_EQ(data->samples.size(), 4u);
  EXPECT_EQ(data->samples[0].id, "fast");
  EXPECT_EQ(data->samples[1].id, "fast/infill");
  EXPECT_EQ(data->samples[2].id, "fast2");
  auto text = [&](const std::vector<std::int64_t>& ids) {
    return tokenizer->decode(std::vector<std::int32_t>(ids.begin(), ids.end()));
  };
  // End to end: the reference in the prompt, the whole candidate as the answer.
  EXPECT_NE(text(data->samples[0].prompt).find(reference(1)), std::string::npos);
  EXPECT_EQ(text(data->samples[0].response), "```python\n" + candidate(1) + "```<|im_end|>");
  // Infilling: the skeleton in the prompt, the CUDA source's assignment as the answer.
  const std::string infill_prompt = text(data->samples[1].prompt);
  EXPECT_NE(infill_prompt.find("class ModelNew"), std::string::npos);
  const std::string answer = text(data->samples[1].response);
  EXPECT_EQ(answer.rfind("```python\nsource = \"\"\"", 0), 0u) << answer;
  EXPECT_NE(answer.find("x[0] = 1;"), std::string::npos);
  EXPECT_EQ(infill_prompt.find("x[0] = 1;"), std::string::npos);
}

TEST_F(DiceDataBuildSftTest, ResumesAfterAKillThatCutALine) {
  ASSERT_EQ(run(judge_), 0) << err_;
  const std::string sft = read_text(out_file("sft.json"));
  const std::string report = read_text(out_file("report.json"));
  // A kill in the third line's write: two complete lines and half of the third.
  const auto lines = verdict_lines();
  const std::string cut = lines[0] + "\n" + lines[1] + "\n" + lines[2].substr(0, 40);
  std::ofstream(out_file("verdicts.jsonl"), std::ios::binary | std::ios::trunc) << cut;
  for (const char* name : {"sft.json", "report.json", "report.md"}) fs::remove(out_file(name));

  PairJudgeTestDouble again;
  set_sample_verdicts(again);
  ASSERT_EQ(run(again), 0) << err_;
  EXPECT_EQ(again.asked(), (std::vector<std::string>{"slow", "wrong", "broken", "fast2"}));
  EXPECT_NE(out_.find("2 judged before, 4 to judge"), std::string::npos) << out_;
  EXPECT_EQ(read_text(out_file("sft.json")), sft);
  // The same report but for who judged what.
  json::value a = json::parse(report), b = json::parse(read_text(out_file("report.json")));
  EXPECT_EQ(b.at("judged_before").as_int64(), 2);
  EXPECT_EQ(b.at("judged_now").as_int64(), 4);
  for (json::value* v : {&a, &b}) {
    v->as_object().erase("judged_before");
    v->as_object().erase("judged_now");
  }
  EXPECT_EQ(a, b);
  // The cut line is gone: six complete lines, each a verdict.
  const auto resumed = verdict_lines();
  ASSERT_EQ(resumed.size(), 6u);
  for (const std::string& line : resumed) EXPECT_NO_THROW(json::parse(line)) << line;

  // Nothing left: no judge is opened at all.
  opened_ = 0;
  ASSERT_EQ(run(again), 0) << err_;
  EXPECT_EQ(opened_, 0);
  EXPECT_EQ(read_text(out_file("sft.json")), sft);
}

TEST_F(DiceDataBuildSftTest, AJudgeThatDiesKeepsWhatItJudged) {
  PairJudgeTestDouble dying;
  set_sample_verdicts(dying);
  dying.fail_after(3);
  EXPECT_EQ(run(dying), 1);
  EXPECT_NE(err_.find("judging stopped"), std::string::npos) << err_;
  EXPECT_NE(err_.find("3 of 6 judged"), std::string::npos) << err_;
  EXPECT_EQ(verdict_lines().size(), 3u);
  EXPECT_FALSE(fs::exists(out_file("sft.json")));

  ASSERT_EQ(run(judge_), 0) << err_;
  EXPECT_EQ(judge_.asked(), (std::vector<std::string>{"wrong", "broken", "fast2"}));
  EXPECT_EQ(sft_items().size(), 2u);
}

TEST_F(DiceDataBuildSftTest, AnotherThresholdNeedsNoJudge) {
  ASSERT_EQ(run(judge_), 0) << err_;
  options_.rule.min_speedup = 5;
  opened_ = 0;
  ASSERT_EQ(run(judge_), 0) << err_;
  EXPECT_EQ(opened_, 0);
  auto items = sft_items();
  ASSERT_EQ(items.size(), 1u);
  EXPECT_EQ(testing::str(items[0], "id"), "fast2");
  // At 1.2x the slow pair (1.5x, tight) passes; the noisy one (bound ~1.09x) still does not.
  options_.rule.min_speedup = 1.2;
  ASSERT_EQ(run(judge_), 0) << err_;
  items = sft_items();
  ASSERT_EQ(items.size(), 3u);
  EXPECT_EQ(testing::str(items[1], "id"), "slow");
  // The infilling form only.
  options_.form = SftForm::kInfill;
  ASSERT_EQ(run(judge_), 0) << err_;
  items = sft_items();
  ASSERT_EQ(items.size(), 3u);
  EXPECT_EQ(testing::str(items[0], "id"), "fast");
  EXPECT_EQ(testing::str(items[0], "prefix") + testing::str(items[0], "middle") +
                testing::str(items[0], "suffix"),
            candidate(1));
  EXPECT_FALSE(items[0].contains("cuda_code"));
}

TEST_F(DiceDataBuildSftTest, AChangedPairIsNotTakenForItsOldVerdict) {
  ASSERT_EQ(run(judge_), 0) << err_;
  auto pairs = sample_pairs();
  pairs[2] = pair_json("slow", "2", 3, candidate(33));
  write_pairs(pairs);
  EXPECT_EQ(run(judge_), 1);
  EXPECT_NE(err_.find("1 recorded verdicts are of other pairs than " + options_.input),
            std::string::npos)
      << err_;
  EXPECT_NE(err_.find("verdicts.jsonl: line 3: id slow"), std::string::npos) << err_;
}

TEST_F(DiceDataBuildSftTest, TheJudgesOwnFailuresAreJudgedAgain) {
  PairJudgeTestDouble flaky;
  set_sample_verdicts(flaky);
  flaky.set("wrong", failed(FailureClass::INTERNAL_ERROR, false));
  flaky.set("fast2", failed(FailureClass::SANDBOX_UNAVAILABLE, false));
  ASSERT_EQ(run(flaky), 0) << err_;
  EXPECT_EQ(sft_items().size(), 1u);
  EXPECT_NE(err_.find("2 pairs got a failure of the judge itself"), std::string::npos) << err_;
  ASSERT_EQ(run(judge_), 0) << err_;
  EXPECT_EQ(judge_.asked(), (std::vector<std::string>{"wrong", "fast2"}));
  EXPECT_NE(err_.find("2 recorded verdicts are failures of the judge itself"), std::string::npos);
  EXPECT_EQ(sft_items().size(), 2u);  // the new verdict of fast2 stands
  EXPECT_EQ(verdict_lines().size(), 8u);
}

TEST_F(DiceDataBuildSftTest, WithoutAGpuNothingIsKeptOrRecorded) {
  // An earlier run on a GPU node judged two pairs; a third line was cut.
  ASSERT_EQ(run(judge_), 0) << err_;
  const auto lines = verdict_lines();
  const std::string before = lines[0] + "\n" + lines[1] + "\n" + lines[2].substr(0, 10);
  std::ofstream(out_file("verdicts.jsonl"), std::ios::binary | std::ios::trunc) << before;
  for (const char* name : {"sft.json", "report.json", "report.md"}) fs::remove(out_file(name));

  PairJudgeTestDouble cpu = PairJudgeTestDouble::without_gpu("no GPU found (nvidia-smi gave \"\")");
  cpu.set("broken", failed(FailureClass::STATIC_CHECK, false));
  EXPECT_EQ(run(cpu), kBuildSftNoGpu);
  EXPECT_NE(err_.find("no GPU here (no GPU found"), std::string::npos) << err_;
  EXPECT_NE(out_.find("nothing kept, no sft.json written; screened 4 pairs, 1 of them fail"),
            std::string::npos)
      << out_;
  EXPECT_EQ(cpu.asked(), (std::vector<std::string>{"slow", "wrong", "broken", "fast2"}));
  EXPECT_FALSE(fs::exists(out_file("sft.json")));
  EXPECT_FALSE(fs::exists(out_file("report.json")));
  EXPECT_EQ(read_text(out_file("verdicts.jsonl")), before);  // not cut back, nothing added
  const json::value report = json::parse(read_text(out_file("report-no-gpu.json")));
  EXPECT_FALSE(report.at("measured").as_bool());
  EXPECT_EQ(report.at("kept").as_int64(), 0);
  EXPECT_EQ(report.at("outcomes").at("unmeasured").as_int64(), 3);
  EXPECT_EQ(report.at("outcomes").at("staticCheck").as_int64(), 1);
  // The two judged before keep their measured outcomes in the report; none is kept here.
  EXPECT_EQ(report.at("items").at(0).at("outcome").as_string(), "kept");
  EXPECT_EQ(report.at("judged_before").as_int64(), 2);
  EXPECT_NE(read_text(out_file("report-no-gpu.md")).find("**No GPU here: nothing is kept.**"),
            std::string::npos);

  // Back on a GPU: the rest judged, the no-GPU report gone.
  ASSERT_EQ(run(judge_), 0) << err_;
  EXPECT_EQ(sft_items().size(), 2u);
  EXPECT_FALSE(fs::exists(out_file("report-no-gpu.json")));
}

TEST_F(DiceDataBuildSftTest, BadInputAndUnwritableOutput) {
  std::ofstream(options_.input, std::ios::binary | std::ios::trunc)
      << R"([{"id": "a", "pytorch_code": "r"}])";
  EXPECT_EQ(run(judge_), 1);
  EXPECT_NE(err_.find(options_.input + ": 1 of 1 items are not pairs:\n  " + options_.input +
                      ": item 0 (id a): \"cuda_code\" is missing"),
            std::string::npos)
      << err_;
  options_.input = dir_.sub("missing.json");
  EXPECT_EQ(run(judge_), 1);
  EXPECT_NE(err_.find("missing.json: no such file"), std::string::npos) << err_;
  options_.input = dir_.sub("pairs.json");
  write_pairs(sample_pairs());
  std::ofstream(dir_.sub("file"), std::ios::binary) << "x";
  options_.out_dir = dir_.sub("file");
  EXPECT_EQ(run(judge_), 1);
  EXPECT_NE(err_.find("cannot create the folder"), std::string::npos) << err_;
  EXPECT_EQ(opened_, 0);
}

}  // namespace
}  // namespace dice::data
