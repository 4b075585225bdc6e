// tools/dice-eval/eval_table.h: the table's rows against hand-computed cases: fast_p over ALL
// problems of a level (missing verdicts count as wrong), the geo-mean of the correct kernels'
// speedups, the noise check, and several answers per problem with pass@k.
#include "tools/dice-eval/eval_table.h"

#include <gtest/gtest.h>

namespace dice::eval {
namespace {

Problem problem(const std::string& id, const std::string& level,
                TaskKind kind = TaskKind::kEndToEnd) {
  Problem p;
  p.id = id;
  p.level = level;
  p.kind = kind;
  return p;
}

// A correct answer whose speedup is measured tightly (100 trials, 1% spread on each side).
AnswerVerdict correct(double speedup) {
  AnswerVerdict a;
  a.judged = a.compiled = a.correct = a.rewarded = true;
  a.kernel_ms_mean = 1.0;
  a.kernel_ms_std = 0.01;
  a.reference_ms_mean = speedup;
  a.reference_ms_std = 0.01 * speedup;
  a.timing_trials = 100;
  a.speedup = speedup;
  return a;
}

AnswerVerdict wrong(bool compiled) {
  AnswerVerdict a;
  a.judged = true;
  a.compiled = compiled;
  return a;
}

const TableRow* find_row(const EvalTable& table, TaskKind kind, const std::string& level) {
  for (const TableRow& row : table.rows) {
    if (row.kind == kind && row.level == level) return &row;
  }
  return nullptr;
}

TEST(DiceEvalTableTest, FastPIsOverAllProblemsOfTheLevel) {
  const std::vector<Problem> problems = {problem("a", "1"), problem("b", "1"), problem("c", "1"),
                                         problem("d", "1"), problem("e", "2"), problem("f", "2")};
  const std::map<std::string, std::vector<AnswerVerdict>> verdicts = {{"a", {correct(3.0)}},
                                                                      {"b", {correct(1.5)}},
                                                                      {"c", {wrong(true)}},
                                                                      // "d": no verdict at all
                                                                      {"e", {correct(0.5)}},
                                                                      {"f", {wrong(false)}}};
  const EvalTable table = tally_table(problems, verdicts, {1, {1}, kDefaultNoiseZ});
  ASSERT_EQ(table.rows.size(), 3u);  // level 1, level 2, all

  const TableRow* one = find_row(table, TaskKind::kEndToEnd, "1");
  ASSERT_NE(one, nullptr);
  EXPECT_EQ(one->problems, 4);
  EXPECT_EQ(one->incomplete, 1);  // d
  EXPECT_EQ(one->answers, 3);
  EXPECT_DOUBLE_EQ(one->exec, 0.5);  // a, b of 4
  EXPECT_DOUBLE_EQ(one->fast_0, 0.5);
  EXPECT_DOUBLE_EQ(one->fast_1, 0.5);   // a (3x), b (1.5x)
  EXPECT_DOUBLE_EQ(one->fast_2, 0.25);  // a only
  EXPECT_DOUBLE_EQ(one->compiled, 0.75);
  EXPECT_DOUBLE_EQ(one->pass_at_k.at(1), 0.5);
  EXPECT_NEAR(one->geo_mean_speedup, 2.1213203, 1e-6);  // sqrt(3 x 1.5)
  EXPECT_EQ(one->timed, 2);

  const TableRow* two = find_row(table, TaskKind::kEndToEnd, "2");
  ASSERT_NE(two, nullptr);
  EXPECT_DOUBLE_EQ(two->exec, 0.5);
  EXPECT_DOUBLE_EQ(two->fast_1, 0.0);  // correct but slower than eager
  EXPECT_NEAR(two->geo_mean_speedup, 0.5, 1e-12);

  const TableRow* all = find_row(table, TaskKind::kEndToEnd, kAllLevels);
  ASSERT_NE(all, nullptr);
  EXPECT_EQ(all->problems, 6);
  EXPECT_DOUBLE_EQ(all->exec, 0.5);
  EXPECT_DOUBLE_EQ(all->fast_1, 2.0 / 6.0);
  EXPECT_DOUBLE_EQ(all->fast_2, 1.0 / 6.0);
  EXPECT_NEAR(all->geo_mean_speedup, 1.3103707, 1e-6);  // (3 x 1.5 x 0.5)^(1/3)
  EXPECT_EQ(all->timed, 3);
}

TEST(DiceEvalTableTest, TheNoiseCheckTurnsDownASpeedupWithinTheNoise) {
  AnswerVerdict noisy = correct(1.2);
  noisy.kernel_ms_std = 0.5;
  noisy.reference_ms_std = 0.6;
  noisy.timing_trials = 11;
  const std::vector<Problem> problems = {problem("a", "1"), problem("b", "1")};
  const std::map<std::string, std::vector<AnswerVerdict>> verdicts = {{"a", {noisy}},
                                                                      {"b", {correct(1.2)}}};
  const EvalTable checked = tally_table(problems, verdicts, {1, {1}, kDefaultNoiseZ});
  EXPECT_DOUBLE_EQ(checked.rows[0].fast_1, 0.5);      // b only
  EXPECT_DOUBLE_EQ(checked.rows[0].fast_1_raw, 1.0);  // KernelBench's rule: both
  EXPECT_EQ(checked.rows[0].noise_rejected_1, 1);
  const EvalTable plain = tally_table(problems, verdicts, {1, {1}, 0.0});
  EXPECT_DOUBLE_EQ(plain.rows[0].fast_1, 1.0);
  EXPECT_EQ(plain.rows[0].noise_rejected_1, 0);
}

TEST(DiceEvalTableTest, SeveralAnswersGiveMeanRatesAndPassAtK) {
  const std::vector<Problem> problems = {problem("a", "1"), problem("b", "1"), problem("c", "1")};
  const std::map<std::string, std::vector<AnswerVerdict>> verdicts = {
      {"a", {correct(3.0), wrong(true), correct(3.0), wrong(false)}},  // 2 of 4
      {"b", {wrong(true), wrong(true), wrong(true), wrong(true)}},     // 0 of 4
      {"c", {wrong(true), correct(1.5), wrong(true)}},                 // 1 of 4, one missing
  };
  const EvalTable table = tally_table(problems, verdicts, {4, {1, 2}, kDefaultNoiseZ});
  const TableRow& row = table.rows[0];
  EXPECT_EQ(row.incomplete, 1);
  EXPECT_EQ(row.answers, 11);
  EXPECT_DOUBLE_EQ(row.exec, 0.25);  // (2/4 + 0 + 1/4) / 3
  EXPECT_DOUBLE_EQ(row.pass_at_k.at(1), 0.25);
  // pass@2: a: 1 - C(2,2)/C(4,2) = 5/6; b: 0; c: 1 - C(3,2)/C(4,2) = 1/2.
  EXPECT_NEAR(row.pass_at_k.at(2), (5.0 / 6.0 + 0.0 + 0.5) / 3.0, 1e-12);
  EXPECT_DOUBLE_EQ(row.fast_2, (2.0 / 4.0) / 3.0);
  EXPECT_EQ(row.timed, 3);
}

// Both columns of dice-eval's table: the row as judged (libraries allowed) and own kernels only
// (the same answers, those that called a library not correct).
TEST(DiceEvalTableTest, OwnKernelsOnlyCellsComeFromTheirOwnAnswers) {
  const std::vector<Problem> problems = {problem("a", "1"), problem("b", "1"), problem("c", "2")};
  const std::map<std::string, std::vector<AnswerVerdict>> judged = {
      {"a", {correct(3.0)}}, {"b", {correct(1.5)}}, {"c", {correct(2.5)}}};
  std::map<std::string, std::vector<AnswerVerdict>> own = judged;
  own["a"][0].correct = own["a"][0].rewarded = false;  // it called cuBLAS
  const EvalTable table = tally_table(problems, judged, own, {1, {1}, kDefaultNoiseZ});
  const TableRow* one = find_row(table, TaskKind::kEndToEnd, "1");
  ASSERT_NE(one, nullptr);
  EXPECT_DOUBLE_EQ(one->exec, 1.0);
  EXPECT_DOUBLE_EQ(one->fast_2, 0.5);  // a
  EXPECT_DOUBLE_EQ(one->own_kernels_only.exec, 0.5);
  EXPECT_DOUBLE_EQ(one->own_kernels_only.fast_2, 0.0);
  EXPECT_NEAR(one->own_kernels_only.geo_mean_speedup, 1.5, 1e-12);
  const TableRow* all = find_row(table, TaskKind::kEndToEnd, kAllLevels);
  ASSERT_NE(all, nullptr);
  EXPECT_DOUBLE_EQ(all->exec, 1.0);
  EXPECT_DOUBLE_EQ(all->own_kernels_only.exec, 2.0 / 3.0);
  EXPECT_EQ(all->own_kernels_only.timed, 2);
  // Without library calls the two agree.
  const EvalTable same = tally_table(problems, judged, {1, {1}, kDefaultNoiseZ});
  EXPECT_DOUBLE_EQ(same.rows.back().own_kernels_only.exec, same.rows.back().exec);
}

TEST(DiceEvalTableTest, RowsComeByKindThenLevelWithAnAllRowEach) {
  const std::vector<Problem> problems = {
      problem("x", "10", TaskKind::kInfill), problem("y", "2", TaskKind::kInfill),
      problem("z", "", TaskKind::kInfill), problem("w", "1", TaskKind::kEndToEnd)};
  const EvalTable table = tally_table(problems, {}, {1, {1}, kDefaultNoiseZ});
  std::vector<std::string> rows;
  for (const TableRow& r : table.rows)
    rows.push_back(std::string(kind_name(r.kind)) + "/" + r.level);
  EXPECT_EQ(rows, (std::vector<std::string>{"infill/2", "infill/10", "infill/", "infill/all",
                                            "end_to_end/1", "end_to_end/all"}));
  for (const TableRow& r : table.rows) {
    EXPECT_EQ(r.exec, 0.0);
    EXPECT_EQ(r.incomplete, r.problems);  // nothing judged: every problem counts as wrong
  }
}

}  // namespace
}  // namespace dice::eval
