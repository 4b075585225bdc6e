// tools/dice-eval/plan.h: an attempt's eval-only curriculum (as the learner's config loader
// reads it), its chunks, the evaluation's settings file and the attempt run ids.
#include "tools/dice-eval/plan.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/json/parse_text.h"
#include "options/dice_config.h"
#include "tests/support/temp_dir.h"

namespace dice::eval {
namespace {

Problem problem(const std::string& id, TaskKind kind) {
  Problem p;
  p.id = id;
  p.level = "1";
  p.kind = kind;
  p.pytorch_code = "class Model: ...";
  if (kind == TaskKind::kInfill) {
    p.prefix = "import torch\n";
    p.suffix = "class ModelNew: ...";
  }
  return p;
}

EvalSettings settings() {
  EvalSettings s;
  s.model = "/models/m";
  s.problems = "/data/kb";
  s.problems_hash = "abc";
  s.problem_count = 250;
  s.decoding = "greedy";
  s.max_new_tokens = 4096;
  s.reward_mode = "full";
  s.config = "/dice/configs/local.yaml";
  return s;
}

TEST(DiceEvalPlanTest, AnAttemptIsAnEvalOnlyCurriculumInChunksOfOneKind) {
  testing_util::TempDir dir("dice-eval-plan");
  std::vector<Problem> problems;
  for (int i = 0; i < 5; ++i)
    problems.push_back(problem("e" + std::to_string(i), TaskKind::kEndToEnd));
  problems.push_back(problem("i0", TaskKind::kInfill));
  std::vector<const Problem*> ask;
  for (const Problem& p : problems) ask.push_back(&p);
  AttemptOptions options;
  options.chunk_size = 2;
  auto attempt = write_attempt(dir.path(), "eval-x", 3, ask, options);
  ASSERT_TRUE(attempt.ok()) << attempt.status().to_string();
  EXPECT_EQ(attempt->run_id, "eval-x-a3");
  EXPECT_EQ(attempt->problems, 6);
  EXPECT_EQ(attempt->phases, (std::vector<std::string>{"end_to_end-001", "end_to_end-002",
                                                       "end_to_end-003", "infill-001"}));

  auto curriculum = load_curriculum(attempt->curriculum);
  ASSERT_TRUE(curriculum.ok()) << curriculum.status().to_string();
  ASSERT_EQ(curriculum->phases.size(), 4u);
  const CurriculumPhase& last = curriculum->phases.back();
  EXPECT_EQ(last.type, PhaseType::kEval);
  EXPECT_EQ(last.kind, TaskKind::kInfill);
  EXPECT_EQ(last.decoding, Decoding::kGreedy);
  EXPECT_EQ(last.samples_per_task, 1);
  EXPECT_EQ(last.timing, true);
  ASSERT_EQ(last.task_files.size(), 1u);
  EXPECT_EQ(last.task_files[0], attempt->dir + "/infill-001.json");

  std::ifstream chunk(attempt->dir + "/end_to_end-003.json");
  std::stringstream text;
  text << chunk.rdbuf();
  boost::system::error_code error;
  std::string position;
  const boost::json::value tasks = parse_json_text(text.str(), &error, &position);
  ASSERT_FALSE(error) << position;
  ASSERT_EQ(tasks.as_array().size(), 1u);
  EXPECT_EQ(tasks.as_array()[0].as_object().at("id"), "e4");
}

TEST(DiceEvalPlanTest, ARerunMustHaveTheSameSettings) {
  testing_util::TempDir dir("dice-eval-settings");
  const std::string out = dir.sub("out");
  ASSERT_TRUE(check_or_record_settings(out, "eval-1", settings()).ok());
  EXPECT_TRUE(std::filesystem::exists(out + "/evaluation.json"));
  EXPECT_TRUE(check_or_record_settings(out, "eval-1", settings()).ok());
  EvalSettings more = settings();
  more.samples = 4;
  const Status changed = check_or_record_settings(out, "eval-1", more);
  ASSERT_EQ(changed.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(changed.message().substr(0, changed.message().find(": to resume")),
            out + "/evaluation.json: samples is 1 there, 4 here");
  const Status other = check_or_record_settings(out, "eval-2", settings());
  EXPECT_NE(other.message().find("holds evaluation eval-1, not eval-2"), std::string::npos);
  // The judging is pinned too: an evaluation judged under another library policy or tolerance
  // is not resumed into this table.
  EvalSettings judged = settings();
  judged.judging = "libraries allowed, atol = rtol = 0.01";
  EXPECT_NE(check_or_record_settings(out, "eval-1", judged)
                .message()
                .find("judging is \"\" there, \"libraries allowed, atol = rtol = 0.01\" here"),
            std::string::npos);
  std::ofstream(out + "/evaluation.json") << "[1, 2]";
  EXPECT_EQ(check_or_record_settings(out, "eval-1", settings()).code(), StatusCode::kCorruption);
}

TEST(DiceEvalPlanTest, IdsComeFromTheSettingsAndAttemptsFromRunIds) {
  EvalSettings a = settings(), b = settings();
  EXPECT_EQ(default_evaluation_id(a), default_evaluation_id(b));
  EXPECT_EQ(default_evaluation_id(a).size(), 17u);  // "eval-" + 12 hex
  b.overrides = {"reward.timeout_seconds=60"};
  EXPECT_NE(default_evaluation_id(a), default_evaluation_id(b));

  std::vector<Problem> one = {problem("x", TaskKind::kEndToEnd)};
  std::vector<Problem> two = one;
  two[0].pytorch_code += " ";
  EXPECT_NE(problems_hash(one), problems_hash(two));

  EXPECT_EQ(attempt_run_id("eval-x", 12), "eval-x-a12");
  EXPECT_EQ(attempt_of_run("eval-x-a12", "eval-x"), 12);
  EXPECT_EQ(attempt_of_run("eval-x-a", "eval-x"), std::nullopt);
  EXPECT_EQ(attempt_of_run("eval-x-a01", "eval-x"), std::nullopt);
  EXPECT_EQ(attempt_of_run("eval-x-a1b", "eval-x"), std::nullopt);
  EXPECT_EQ(attempt_of_run("eval-xy-a1", "eval-x"), std::nullopt);
  EXPECT_EQ(attempt_of_run("eval-x", "eval-x"), std::nullopt);
}

}  // namespace
}  // namespace dice::eval
