// dice-dash as a real process over a real reward log: the JSON API's values equal what was
// written, bad requests and bad logs give clear answers, a token guards every request, and the
// dashboard keeps serving (and shows new steps) while a writer appends.
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <cmath>

#include "tests/rewardlog/rewardlog_test_util.h"
#include "tests/tools/dice_dash_test_util.h"

namespace dice::dash {
namespace {

namespace json = boost::json;
using schema::FailureClass;
using testing::CandidateSpec;
using testing::DashProcess;
using testing::http_get;
using testing::HttpResult;
using testing::open_writer;
using testing::write_steps;

std::vector<double> numbers(const json::value& array) {
  std::vector<double> out;
  for (const json::value& v : array.as_array())
    out.push_back(v.is_null() ? NAN : v.to_number<double>());
  return out;
}

void expect_numbers(const json::value& array, const std::vector<double>& expected,
                    const std::string& what) {
  const std::vector<double> got = numbers(array);
  ASSERT_EQ(got.size(), expected.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::isnan(expected[i])) {
      EXPECT_TRUE(std::isnan(got[i])) << what << "[" << i << "] = " << got[i] << ", want null";
    } else {
      EXPECT_NEAR(got[i], expected[i], 1e-6) << what << "[" << i << "]";
    }
  }
}

class DiceDashApiTest : public ::testing::Test {
 protected:
  void SetUp() override {
    log_ = dir_.sub("reward_log");
    auto writer = open_writer(log_);
    ASSERT_NE(writer, nullptr);
    ASSERT_TRUE(writer->append({testing::run_record("run-a")}).ok());
    write_steps(*writer, 0, 3);
    ASSERT_TRUE(writer->close().ok());
  }

  // Starts dice-dash over the log (once per test) and GETs `target`, which must answer 200.
  json::value get_ok(const std::string& target) {
    if (!dash_) {
      dash_ = std::make_unique<DashProcess>(dir_);
      if (!dash_->start({log_})) return nullptr;
    }
    const HttpResult r = http_get(dash_->port(), target);
    EXPECT_EQ(r.status, 200) << target << ": " << r.body;
    return r.status == 200 ? json::parse(r.body) : json::value(nullptr);
  }

  testing_util::TempDir dir_{"dice-dash-api-test"};
  std::string log_;
  std::unique_ptr<DashProcess> dash_;
};

TEST_F(DiceDashApiTest, RunsListsEachLogAndItsRuns) {
  const json::value body = get_ok("/api/runs");
  ASSERT_TRUE(body.is_object());
  EXPECT_EQ(body.at("logs").at(0).at("state").as_string(), "ok");
  EXPECT_EQ(body.at("logs").at(0).at("path").as_string(), log_);
  ASSERT_EQ(body.at("runs").as_array().size(), 1u);
  const json::value& run = body.at("runs").at(0);
  EXPECT_EQ(run.at("run_id").as_string(), "run-a");
  EXPECT_EQ(run.at("host").as_string(), "node-1");
  EXPECT_EQ(run.at("steps").to_number<int>(), 3);
  EXPECT_EQ(run.at("last_step").to_number<int>(), 2);
}

TEST_F(DiceDashApiTest, RunSeriesEqualWhatWasWritten) {
  const json::value d = get_ok("/api/run?log=0&run=run-a");
  ASSERT_TRUE(d.is_object());
  const json::value& s = d.at("steps");
  expect_numbers(s.at("step"), {0, 1, 2}, "step");
  expect_numbers(s.at("mean_reward"), {0.5, 0.75, 0.5}, "mean_reward");
  expect_numbers(s.at("correct_rate"), {0.5, 0.75, 0.5}, "correct_rate");
  expect_numbers(s.at("compile_rate"), {0.75, 0.75, 1.0}, "compile_rate");
  expect_numbers(s.at("policy_version"), {0, 1, 2}, "policy_version");
  expect_numbers(s.at("loss"), {0.5, 0.25, NAN}, "loss (the eval step has no update)");
  expect_numbers(s.at("grad_norm"), {2, 3, NAN}, "grad_norm");
  expect_numbers(s.at("kl"), {0, static_cast<float>(0.01), NAN}, "kl");
  expect_numbers(s.at("clip_fraction"), {0.25, 0.5, NAN}, "clip_fraction");
  // Step 0: both groups mixed; step 1: t1 all correct (dropped), t2 mixed; step 2: none mixed.
  // Every fixture response differs from the others, so each group has two texts of two.
  expect_numbers(s.at("mixed_group_share"), {1, 0.5, 0}, "mixed_group_share");
  expect_numbers(s.at("groups_judged"), {2, 2, 2}, "groups_judged");
  expect_numbers(s.at("groups_mixed"), {2, 1, 0}, "groups_mixed");
  expect_numbers(s.at("distinct_text_share"), {1, 1, 1}, "distinct_text_share");
  expect_numbers(s.at("distinct_texts_mean"), {2, 2, 2}, "distinct_texts_mean");
  expect_numbers(s.at("group_size"), {2, 2, 2}, "group_size");
  expect_numbers(s.at("dropped_distinct_texts_mean"), {NAN, 2, 2}, "dropped_distinct_texts_mean");
  expect_numbers(s.at("seconds"), {4, 4, 4}, "seconds");
  expect_numbers(s.at("internal_errors"), {0, 0, 0}, "internal_errors");
  expect_numbers(s.at("internal_error_share"), {0, 0, 0}, "internal_error_share");
  EXPECT_EQ(s.at("phase_name").at(2).as_string(), "eval");
  EXPECT_TRUE(s.at("evaluation").at(2).as_bool());
  EXPECT_EQ(s.at("phase").at(0).as_string(), "e2e");

  const json::object& failures = d.at("failure_rates").as_object();
  EXPECT_EQ(failures.size(), 3u) << json::serialize(failures);
  expect_numbers(failures.at("compileError"), {0.25, 0.25, 0}, "compileError");
  expect_numbers(failures.at("incorrect"), {0.25, 0, 0.25}, "incorrect");
  expect_numbers(failures.at("timeout"), {0, 0, 0.25}, "timeout");
  // Two findings of one check in one candidate count once.
  expect_numbers(d.at("finding_rates").at("torch-op-in-forward"), {0.5, 0, 0}, "findings");
  expect_numbers(d.at("speedups"), {0.5, 1, 1.5, 2, 3, 4}, "speedups of correct kernels");
  expect_numbers(d.at("speedup_median"), {1, 3, 1}, "speedup_median");
  expect_numbers(d.at("reward_seconds_per_candidate"), {3, 3, 3}, "reward seconds");
  expect_numbers(d.at("max_staleness"), {0, 1, 0}, "max_staleness");
  expect_numbers(d.at("mean_staleness"), {0, 0.25, 0}, "mean_staleness");

  const json::value& metrics = d.at("metrics");
  expect_numbers(metrics.at("reward/correct_rate").at("value"), {0.5, 0.75, 0.5}, "metric");
  expect_numbers(metrics.at("learner/loss").at("step"), {0, 1}, "learner/loss steps");
  expect_numbers(metrics.at("rollout/candidates_per_s").at("value"), {1, 1, 1}, "cand/s");
  EXPECT_TRUE(d.at("unreadable").as_array().empty());
  EXPECT_TRUE(d.at("not_in_log").as_array().empty()) << json::serialize(d.at("not_in_log"));
}

// Reward and correct rate per step for each phase and level; the level comes from the run's
// TaskRecords (t1 is level 1, t2 level 2), the phase from the step record (step 2 is an eval).
TEST_F(DiceDashApiTest, RunSeriesSplitByPhaseAndLevel) {
  const json::value d = get_ok("/api/run?log=0&run=run-a");
  ASSERT_TRUE(d.is_object());
  const json::object& by_level = d.at("by_level").as_object();
  ASSERT_EQ(by_level.size(), 4u) << json::serialize(by_level);
  const auto expect_series = [&](const std::string& name, const std::vector<double>& reward,
                                 const std::vector<double>& correct) {
    ASSERT_TRUE(by_level.contains(name)) << name << " in " << json::serialize(by_level);
    expect_numbers(by_level.at(name).at("mean_reward"), reward, name + " mean_reward");
    expect_numbers(by_level.at(name).at("correct_rate"), correct, name + " correct_rate");
  };
  expect_series("rl / level 1", {0.5, 1, NAN}, {0.5, 1, NAN});
  expect_series("rl / level 2", {0.5, 0.5, NAN}, {0.5, 0.5, NAN});
  expect_series("eval (eval) / level 1", {NAN, NAN, 0}, {NAN, NAN, 0});
  expect_series("eval (eval) / level 2", {NAN, NAN, 1}, {NAN, NAN, 1});
}

// The fixture's eval step is one stage: its phase, step and policy version from the step
// record, the learner's table from its eval/ metrics; the name "eval" says no split or kind.
TEST_F(DiceDashApiTest, StagesHoldTheEvaluationPhasesAndTheirTable) {
  const json::value d = get_ok("/api/run?log=0&run=run-a");
  ASSERT_TRUE(d.is_object());
  const json::array& stages = d.at("stages").as_array();
  ASSERT_EQ(stages.size(), 1u) << json::serialize(stages);
  const json::value& s = stages.at(0);
  EXPECT_EQ(s.at("phase").as_string(), "eval");
  EXPECT_EQ(s.at("first_step").to_number<int>(), 2);
  EXPECT_EQ(s.at("last_step").to_number<int>(), 2);
  EXPECT_EQ(s.at("policy_version").to_number<int>(), 2);
  EXPECT_TRUE(s.at("split").is_null());
  EXPECT_TRUE(s.at("kind").is_null());
  const testing::EvalTable want = testing::fixture_eval_table();
  EXPECT_EQ(s.at("tasks").to_number<double>(), want.tasks);
  EXPECT_EQ(s.at("exec").to_number<double>(), want.exec);
  EXPECT_EQ(s.at("fast_1").to_number<double>(), want.fast_1);
  EXPECT_EQ(s.at("fast_2").to_number<double>(), want.fast_2);
}

// Phases named as the curricula name them: split and kind from the name; a phase met again
// after training is a stage of its own with the table written within its steps; a phase whose
// table is not logged yet has null measures.
TEST(DiceDashStagesTest, EachRunOfAnEvalPhaseIsAStageWithTheTableOfItsSteps) {
  testing_util::TempDir dir("dice-dash-stages-test");
  const std::string log = dir.sub("reward_log");
  const auto spec = testing::fixture_steps()[0];
  testing::write_log(
      log, {testing::step_records("run-a", 0, 0, true, spec, "eval-sft-ood-e2e"),
            testing::step_records("run-a", 1, 0, true, spec, "eval-sft-ood-e2e"),
            testing::eval_table_records("run-a", "eval-sft-ood-e2e", 1, {0.25, 0.125, 0, 8}),
            testing::step_records("run-a", 2, 0, true, spec, "eval-sft-pool-infill"),
            testing::eval_table_records("run-a", "eval-sft-pool-infill", 2, {0.5, 0, 0, 4}),
            testing::step_records("run-a", 3, 0, false, spec, "rl-e2e"),
            testing::step_records("run-a", 4, 1, true, spec, "eval-sft-ood-e2e"),
            testing::eval_table_records("run-a", "eval-sft-ood-e2e", 4, {0.75, 0.5, 0.25, 8}),
            testing::step_records("run-a", 5, 1, true, spec, "eval-end-indist-e2e")});
  DashProcess dash(dir);
  ASSERT_TRUE(dash.start({log}));
  const HttpResult run = http_get(dash.port(), "/api/run?run=run-a");
  ASSERT_EQ(run.status, 200) << run.body;
  const json::array stages = json::parse(run.body).at("stages").as_array();
  ASSERT_EQ(stages.size(), 4u) << json::serialize(stages);
  const auto expect_stage = [&](size_t i, const std::string& phase, int first, int last,
                                int version, const std::string& split, const std::string& kind,
                                std::vector<double> table) {
    const json::value& s = stages.at(i);
    SCOPED_TRACE("stage " + std::to_string(i) + ": " + json::serialize(s));
    EXPECT_EQ(s.at("phase").as_string(), phase);
    EXPECT_EQ(s.at("first_step").to_number<int>(), first);
    EXPECT_EQ(s.at("last_step").to_number<int>(), last);
    EXPECT_EQ(s.at("policy_version").to_number<int>(), version);
    EXPECT_EQ(s.at("split").as_string(), split);
    EXPECT_EQ(s.at("kind").as_string(), kind);
    json::array got;
    for (const char* m : {"exec", "fast_1", "fast_2", "tasks"}) got.push_back(s.at(m));
    expect_numbers(got, table, phase + " exec, fast_1, fast_2, tasks");
  };
  expect_stage(0, "eval-sft-ood-e2e", 0, 1, 0, "ood", "e2e", {0.25, 0.125, 0, 8});
  expect_stage(1, "eval-sft-pool-infill", 2, 2, 0, "pool", "infill", {0.5, 0, 0, 4});
  expect_stage(2, "eval-sft-ood-e2e", 4, 4, 1, "ood", "e2e", {0.75, 0.5, 0.25, 8});
  expect_stage(3, "eval-end-indist-e2e", 5, 5, 1, "indist", "e2e", {NAN, NAN, NAN, NAN});
}

// The trace cut into tokens gives back the response; each token keeps its step; an offset
// inside the "é" moves to the character's end; the task's reference comes with it.
TEST_F(DiceDashApiTest, CandidateCarriesItsTraceAndTheTaskReference) {
  const json::value d = get_ok("/api/candidate?run=run-a&step=1&task=t2&sample=0");
  ASSERT_TRUE(d.is_object());
  const std::string response(d.at("record").at("responseText").as_string());
  ASSERT_NE(response.find("caf\xc3\xa9"), std::string::npos);
  const json::value& trace = d.at("trace");
  EXPECT_EQ(trace.at("num_steps").to_number<int>(), 4);
  const json::array& tokens = trace.at("tokens").as_array();
  const std::vector<uint32_t> ends = testing::trace_token_ends(response);
  ASSERT_EQ(tokens.size(), ends.size());
  ASSERT_EQ(trace.at("unmask_steps").as_array().size(), tokens.size());
  std::string joined;
  for (size_t i = 0; i < tokens.size(); ++i) {
    const std::string text(tokens[i].at("text").as_string());
    EXPECT_EQ(tokens[i].at("step").to_number<int>(), static_cast<int>(i % 4)) << "token " << i;
    joined += text;
    // Where the logged end fell inside the "é", the token keeps the whole character.
    const size_t end =
        ends[i] < response.size() && (response[ends[i]] & 0xC0) == 0x80 ? ends[i] + 1 : ends[i];
    EXPECT_EQ(joined.size(), end) << "token " << i;
  }
  EXPECT_EQ(joined, response);
  EXPECT_FALSE(trace.as_object().contains("note"));

  const json::value& task = d.at("task");
  ASSERT_TRUE(task.is_object()) << json::serialize(d);
  EXPECT_EQ(task.at("taskId").as_string(), "t2");
  EXPECT_EQ(task.at("level").as_string(), "2");
  EXPECT_EQ(task.at("referenceSource").as_string(),
            "class Model(torch.nn.Module):  # reference of t2\n");
}

// A log whose run has no TaskRecords (as one written before them): no levels, no reference, and
// the page is told why.
TEST(DiceDashOldLogTest, WithoutTaskRecordsSaysWhatIsMissing) {
  testing_util::TempDir dir("dice-dash-old-log-test");
  const std::string log = dir.sub("reward_log");
  // Step 3: the fixture writes tasks only at step 0.
  testing::write_log(log,
                     {testing::step_records("run-a", 3, 3, false, testing::fixture_steps()[0])});
  DashProcess dash(dir);
  ASSERT_TRUE(dash.start({log}));
  const HttpResult run = http_get(dash.port(), "/api/run?run=run-a");
  ASSERT_EQ(run.status, 200) << run.body;
  const json::value d = json::parse(run.body);
  EXPECT_TRUE(d.at("by_level").as_object().empty());
  ASSERT_EQ(d.at("not_in_log").as_array().size(), 2u);
  EXPECT_EQ(d.at("not_in_log").at(0).at("field").as_string(), "task level");
  const HttpResult candidate =
      http_get(dash.port(), "/api/candidate?run=run-a&step=3&task=t1&sample=0");
  ASSERT_EQ(candidate.status, 200) << candidate.body;
  const json::value c = json::parse(candidate.body);
  EXPECT_TRUE(c.at("task").is_null());
  EXPECT_NE(std::string(c.at("task_note").as_string()).find("no task record for t1"),
            std::string::npos);
}

// The internal-error alert: a step whose verdicts the reward service could not reach are more
// than 2 % of its verdicts is flagged; one without any, and one from a log written before the
// count (its share null: not measured), are not.
TEST(DiceDashInternalErrorTest, StepsAboveTheAlertShareAreFlagged) {
  testing_util::TempDir dir("dice-dash-internal-error-test");
  const std::string log = dir.sub("reward_log");
  {
    auto writer = open_writer(log);
    ASSERT_NE(writer, nullptr);
    ASSERT_TRUE(writer->append({testing::run_record("run-a")}).ok());
    std::vector<CandidateSpec> faulted = testing::fixture_steps()[0];
    faulted[2].failure = FailureClass::INTERNAL_ERROR;  // 1 of 4 verdicts
    ASSERT_TRUE(writer->append(testing::step_records("run-a", 0, 0, false, faulted)).ok());
    ASSERT_TRUE(
        writer->append(testing::step_records("run-a", 1, 1, false, testing::fixture_steps()[1]))
            .ok());
    capnp::MallocMessageBuilder message;  // as the learner wrote steps before the count
    auto old = message.initRoot<schema::StepRecord>();
    old.setRunId("run-a");
    old.setStep(2);
    old.setNumCandidates(4);
    ASSERT_TRUE(writer->append({testing::must(rewardlog::encode_record(old.asReader()))}).ok());
    ASSERT_TRUE(writer->close().ok());
  }
  DashProcess dash(dir);
  ASSERT_TRUE(dash.start({log}));
  const HttpResult r = http_get(dash.port(), "/api/run?run=run-a");
  ASSERT_EQ(r.status, 200) << r.body;
  const json::value d = json::parse(r.body);
  EXPECT_DOUBLE_EQ(d.at("internal_error_alert_above").to_number<double>(), 0.02);
  const json::value& s = d.at("steps");
  expect_numbers(s.at("internal_errors"), {1, 0, 0}, "internal_errors");
  expect_numbers(s.at("internal_error_share"), {0.25, 0, NAN}, "internal_error_share");
  const json::array& alert = s.at("internal_error_alert").as_array();
  ASSERT_EQ(alert.size(), 3u);
  EXPECT_TRUE(alert[0].as_bool());
  EXPECT_FALSE(alert[1].as_bool());
  EXPECT_FALSE(alert[2].as_bool()) << "a log from before the count is not measured, not alerted";
  // Step 2 has no candidate records: no rate.
  expect_numbers(d.at("failure_rates").at("internalError"), {0.25, 0, NAN}, "internalError rate");
  // The page's series of the same.
  expect_numbers(d.at("metrics").at("reward/internal_error_share").at("value"), {0.25, 0},
                 "reward/internal_error_share");
}

TEST_F(DiceDashApiTest, StepListsGroupsAndCandidates) {
  const json::value d = get_ok("/api/step?run=run-a&step=0");
  ASSERT_TRUE(d.is_object());
  const json::array& groups = d.at("groups").as_array();
  ASSERT_EQ(groups.size(), 2u);
  EXPECT_EQ(groups[0].at("task_id").as_string(), "t1");
  EXPECT_EQ(groups[0].at("group").to_number<int>(), 1);
  EXPECT_EQ(groups[1].at("task_id").as_string(), "t2");
  const json::array& t2 = groups[1].at("candidates").as_array();
  ASSERT_EQ(t2.size(), 2u);
  EXPECT_EQ(t2[0].at("failure").as_string(), "incorrect");
  EXPECT_EQ(t2[0].at("findings").at(0).as_string(), "torch-op-in-forward");
  EXPECT_EQ(t2[1].at("speedup").to_number<double>(), 0.5);
  EXPECT_TRUE(t2[1].at("correct").as_bool());
}

TEST_F(DiceDashApiTest, CandidateCarriesSourceVerdictAndCompilerLog) {
  const json::value d = get_ok("/api/candidate?run=run-a&step=0&task=t1&sample=1");
  ASSERT_TRUE(d.is_object());
  EXPECT_EQ(d.at("record").at("verdict").at("failure").as_string(), "compileError");
  EXPECT_NE(
      std::string(d.at("record").at("evaluatedSource").as_string()).find("t1 sample 1 step 0"),
      std::string::npos);
  ASSERT_EQ(d.at("kernels").as_array().size(), 1u);
  EXPECT_EQ(d.at("kernels").at(0).at("source_hash").as_string(), testing::kernel_hash("t1", 1, 0));
  EXPECT_NE(std::string(d.at("kernels").at(0).at("record").at("compileLog").as_string())
                .find("blockIdx_"),
            std::string::npos);
}

TEST_F(DiceDashApiTest, BadRequestsNameTheParameter) {
  DashProcess dash(dir_);
  ASSERT_TRUE(dash.start({log_}));
  const std::vector<std::tuple<std::string, int, std::string>> cases = {
      {"/api/run", 400, "missing parameter 'run'"},
      {"/api/run?run=run-a&log=x", 400, "parameter 'log' is \\\"x\\\""},
      {"/api/run?run=run-a&log=3", 404, "no log 3"},
      {"/api/run?run=run-z", 404, "run-z"},
      {"/api/step?run=run-a&step=-1", 400, "parameter 'step'"},
      {"/api/step?run=run-a&step=9", 404, "no candidates at step 9"},
      {"/api/candidate?run=run-a&step=0&task=t1", 400, "missing parameter 'sample'"},
      {"/api/candidate?run=run-a&step=0&task=t1&sample=7", 404, "has no sample 7"},
      {"/api/nothing", 404, "no API path /api/nothing"},
  };
  for (const auto& [target, status, message] : cases) {
    const HttpResult r = http_get(dash.port(), target);
    EXPECT_EQ(r.status, status) << target << ": " << r.body;
    EXPECT_NE(r.body.find(message), std::string::npos) << target << ": " << r.body;
  }
  EXPECT_EQ(http_get(dash.port(), "/api/runs", {}, "POST").status, 405) << "read-only";
  EXPECT_EQ(http_get(dash.port(), "/no-such-page").status, 404);
}

TEST_F(DiceDashApiTest, ServesItsEmbeddedPage) {
  DashProcess dash(dir_);
  ASSERT_TRUE(dash.start({log_}));
  const HttpResult page = http_get(dash.port(), "/");
  ASSERT_EQ(page.status, 200);
  EXPECT_NE(page.body.find("/static/vendor/uPlot.iife.min.js"), std::string::npos);
  const HttpResult uplot = http_get(dash.port(), "/static/vendor/uPlot.iife.min.js");
  ASSERT_EQ(uplot.status, 200);
  EXPECT_EQ(uplot.body, testing::read_text(DICE_DASH_WEB_DIR "/vendor/uPlot.iife.min.js"));
  EXPECT_NE(uplot.headers.find("text/javascript"), std::string::npos);
  EXPECT_EQ(http_get(dash.port(), "/static/nope.js").status, 404);
}

TEST_F(DiceDashApiTest, TokenGuardsEveryRequest) {
  DashProcess dash(dir_);
  ASSERT_TRUE(dash.start({log_}, {"--token", "s3cret"}));
  EXPECT_EQ(http_get(dash.port(), "/api/runs").status, 401);
  EXPECT_EQ(http_get(dash.port(), "/").status, 401);
  EXPECT_EQ(http_get(dash.port(), "/static/dash.js").status, 401);
  EXPECT_EQ(http_get(dash.port(), "/api/runs", {"Authorization: Bearer wrong"}).status, 401);
  EXPECT_EQ(http_get(dash.port(), "/api/runs?token=s3cre").status, 401);
  EXPECT_EQ(http_get(dash.port(), "/api/runs", {"Authorization: Bearer s3cret"}).status, 200);
  const HttpResult page = http_get(dash.port(), "/?token=s3cret");
  ASSERT_EQ(page.status, 200);
  EXPECT_NE(page.headers.find("Set-Cookie: dice_dash_token=s3cret"), std::string::npos);
  EXPECT_EQ(
      http_get(dash.port(), "/static/dash.js", {"Cookie: a=1; dice_dash_token=s3cret"}).status,
      200);
  EXPECT_NE(dash.output().find("(token required)"), std::string::npos);
}

TEST_F(DiceDashApiTest, MissingEmptyAndPartlyCorruptLogsGetClearAnswers) {
  const std::string missing = dir_.sub("not_yet");
  const std::string empty = dir_.sub("empty_log");
  {
    auto writer = open_writer(empty);
    ASSERT_NE(writer, nullptr);
    ASSERT_TRUE(writer->close().ok());
  }
  // A candidate of step 1 with bytes that are no CandidateRecord.
  rewardlog::testing::put_raw_value(log_, rewardlog::Family::kCandidates,
                                    rewardlog::candidate_key("run-a", 1, "t2", 0), "junk!!!!");
  DashProcess dash(dir_);
  ASSERT_TRUE(dash.start({log_, missing, empty}));
  EXPECT_NE(dash.output().find("log 1 (" + missing + ") not readable yet"), std::string::npos)
      << dash.output();

  json::value runs = json::parse(http_get(dash.port(), "/api/runs").body);
  EXPECT_EQ(runs.at("logs").at(0).at("state").as_string(), "ok");
  EXPECT_EQ(runs.at("logs").at(1).at("state").as_string(), "missing");
  EXPECT_EQ(runs.at("logs").at(2).at("state").as_string(), "empty");
  const HttpResult missing_run = http_get(dash.port(), "/api/run?log=1&run=run-a");
  EXPECT_EQ(missing_run.status, 404);
  EXPECT_NE(missing_run.body.find("\"kind\":\"missing\""), std::string::npos) << missing_run.body;

  // The damaged step is named; the other steps are still there.
  const HttpResult run = http_get(dash.port(), "/api/run?run=run-a");
  ASSERT_EQ(run.status, 200) << run.body;
  const json::value d = json::parse(run.body);
  ASSERT_EQ(d.at("unreadable").as_array().size(), 1u);
  EXPECT_EQ(d.at("unreadable").at(0).at("step").to_number<int>(), 1);
  EXPECT_NE(std::string(d.at("unreadable").at(0).at("error").as_string()).find("corruption"),
            std::string::npos);
  expect_numbers(d.at("failure_rates").at("compileError"), {0.25, NAN, 0}, "compileError");
  const HttpResult step = http_get(dash.port(), "/api/step?run=run-a&step=1");
  EXPECT_EQ(step.status, 200);
  const json::value step_body = json::parse(step.body);
  EXPECT_EQ(step_body.at("kind").as_string(), "corrupt");
  EXPECT_EQ(step_body.at("groups").at(0).at("candidates").as_array().size(), 2u)
      << "the candidates before the damaged one";

  // The missing log appears as soon as a run creates it.
  auto writer = open_writer(missing);
  ASSERT_NE(writer, nullptr);
  ASSERT_TRUE(writer->append({testing::run_record("run-late")}).ok());
  runs = json::parse(http_get(dash.port(), "/api/runs").body);
  EXPECT_EQ(runs.at("logs").at(1).at("state").as_string(), "ok");
  EXPECT_EQ(runs.at("runs").at(1).at("run_id").as_string(), "run-late");
}

TEST(DiceDashLiveTest, KeepsServingAndShowsNewStepsWhileAWriterAppends) {
  testing_util::TempDir dir("dice-dash-live-test");
  const std::string log = dir.sub("reward_log");
  auto writer = open_writer(log);
  ASSERT_NE(writer, nullptr);
  ASSERT_TRUE(writer->append({testing::run_record("run-a")}).ok());
  write_steps(*writer, 0, 1);
  DashProcess dash(dir);
  ASSERT_TRUE(dash.start({log}));
  ASSERT_EQ(json::parse(http_get(dash.port(), "/api/run?run=run-a").body)
                .at("steps")
                .at("step")
                .as_array()
                .size(),
            1u);
  constexpr uint64_t kSteps = 40;
  for (uint64_t step = 1; step < kSteps; ++step) {
    write_steps(*writer, step, step + 1);
    const HttpResult r = http_get(dash.port(), "/api/run?run=run-a");
    ASSERT_EQ(r.status, 200) << "while the writer appends step " << step << ": " << r.body;
    // refresh-ms 0: every request catches up, so the step acknowledged above is visible.
    EXPECT_EQ(json::parse(r.body).at("steps").at("step").as_array().size(), step + 1);
  }
  ASSERT_TRUE(writer->close().ok());
  EXPECT_EQ(dash.process().wait_exit(std::chrono::milliseconds(0)), -1) << "dice-dash died";
}

TEST(DiceDashCliTest, BadArgumentsExitTwoNamingTheArgument) {
  testing_util::TempDir dir("dice-dash-cli-test");
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{}, "missing LOG"},
      {{"--port", "http", "log"}, "--port \"http\""},
      {{"--port", "70000", "log"}, "--port \"70000\""},
      {{"--refresh-ms=-5", "log"}, "--refresh-ms \"-5\""},
      {{"--colour", "red", "log"}, "unknown option --colour"},
      {{"log", "--port"}, "--port needs a value"},
      {{"--token-file", dir.sub("absent"), "log"}, "--token-file \"" + dir.sub("absent")},
      {{"--token", "a", "--token", "b", "log"}, "give one of --token and --token-file"},
      {{"--bind", "not-an-address", "--port", "0", "log"}, "bind address 'not-an-address'"},
      {{"--log-level", "loud", "log"}, "--log-level \"loud\""},
  };
  for (const auto& [args, message] : cases) {
    const std::string out = dir.sub("out.txt");
    testing_util::ChildProcess dash(DICE_DASH_BINARY, args, out);
    EXPECT_EQ(dash.wait_exit(std::chrono::seconds(20)), 2) << message;
    EXPECT_NE(testing::read_text(out).find(message), std::string::npos)
        << "want \"" << message << "\" in:\n"
        << testing::read_text(out);
  }
}

}  // namespace
}  // namespace dice::dash
