// The step state machine driven by hand-made results (no sockets): what it asks for, what it
// drops, when a group finishes and with which advantages.
#include "learner/step/step_tracker.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "net/wire/envelope.h"

namespace dice {
namespace {

using Body = schema::Envelope::Body;

class StepTrackerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (int i = 0; i < 5; ++i) {
      LearnerTask task;
      task.id = "t" + std::to_string(i);
      task.reference_source = "ref";
      task.prompt = "prompt " + task.id;
      tasks_.push_back(task);
    }
    settings_.run_id = "run";
    settings_.step = 7;
    settings_.samples_per_task = 2;
    settings_.policy_version = 5;
    settings_.max_staleness = 1;
  }

  std::unique_ptr<StepTracker> start(std::size_t n_tasks) {
    auto tracker = std::make_unique<StepTracker>(settings_, &next_work_, &next_group_);
    std::vector<const LearnerTask*> chosen;
    for (std::size_t i = 0; i < n_tasks; ++i) chosen.push_back(&tasks_[i]);
    tracker->start(chosen, now_);
    for (auto& item : tracker->take_outbox()) {
      EXPECT_EQ(item.role, schema::Role::ROLLOUT);
      auto decoded = wire::decode_envelope(item.payload);
      EXPECT_TRUE(decoded.ok());
      auto request = decoded->root().getBody().getRolloutRequest();
      EXPECT_EQ(request.getWorkId(), item.work_id);
      EXPECT_EQ(request.getNumSamples(), settings_.samples_per_task);
      EXPECT_EQ(request.getStep(), 7u);
      rollouts_.push_back({item.work_id, request.getGroup()});
    }
    return tracker;
  }

  transport::WorkResult result(std::uint64_t work_id,
                               const std::function<void(Body::Builder)>& fill) {
    capnp::MallocMessageBuilder message;
    fill(wire::init_envelope(message, "w", "run").getBody());
    auto decoded = wire::decode_envelope(wire::encode(message));
    EXPECT_TRUE(decoded.ok());
    return transport::WorkResult{work_id, "w", std::move(decoded).value()};
  }
  // `text` empty: "text <sample>", a different text for each sample.
  transport::WorkResult candidate(std::size_t group, std::uint32_t sample,
                                  std::uint64_t version = 5, const std::string& text = "") {
    return result(rollouts_[group].first, [&](Body::Builder body) {
      auto c = body.initCandidate();
      c.setSampleIndex(sample);
      c.setTaskId(tasks_[group].id);
      c.setPolicyVersion(version);
      c.setText(text.empty() ? "text " + std::to_string(sample) : text);
    });
  }
  transport::WorkResult verdict(std::uint64_t eval_id, float reward,
                                schema::FailureClass failure = schema::FailureClass::NONE) {
    return result(eval_id, [&](Body::Builder body) {
      auto v = body.initVerdict();
      v.setTaskId(eval_task_[eval_id]);
      v.setReward(reward);
      v.setCompiled(failure == schema::FailureClass::NONE);
      v.setCorrect(reward > 0);
      v.setFailure(failure);
    });
  }
  transport::WorkResult error(std::uint64_t work_id) {
    return result(work_id, [&](Body::Builder body) {
      auto e = body.initError();
      e.setWorkId(work_id);
      e.setMessage("boom");
    });
  }
  // One group of three judged {service fault, 1, 0} under settings_: its finished group and the
  // step's counts.
  void judge_fault_one_zero(std::vector<FinishedGroup>* finished, StepCounts* counts) {
    settings_.samples_per_task = 3;
    auto tracker = start(1);
    for (std::uint32_t i = 0; i < 3; ++i) tracker->handle(candidate(0, i));
    auto ids = evals(*tracker);
    ASSERT_EQ(ids.size(), 3u);
    tracker->handle(verdict(ids[0], 0.0f, schema::FailureClass::INTERNAL_ERROR));
    tracker->handle(verdict(ids[1], 1.0f));
    tracker->handle(verdict(ids[2], 0.0f));
    ASSERT_TRUE(tracker->done());
    *finished = tracker->take_finished();
    *counts = tracker->counts();
    ASSERT_EQ(finished->size(), 1u);
    ASSERT_TRUE((*finished)[0].complete);
    EXPECT_FALSE((*finished)[0].dropped);
    ASSERT_EQ((*finished)[0].samples.size(), 3u);
  }
  // The eval requests queued since the last call: work ids in order.
  std::vector<std::uint64_t> evals(StepTracker& tracker) {
    std::vector<std::uint64_t> ids;
    for (auto& item : tracker.take_outbox()) {
      EXPECT_EQ(item.role, schema::Role::REWARD);
      auto decoded = wire::decode_envelope(item.payload);
      auto request = decoded->root().getBody().getEvalRequest();
      EXPECT_EQ(request.getWorkId(), item.work_id);
      EXPECT_EQ(request.getCandidate().getStep(), 7u);
      EXPECT_TRUE(request.getTask().getId().size() > 0);
      EXPECT_EQ(request.getTask().getWantTiming(), settings_.want_timing);
      EXPECT_EQ(request.getTask().hasRewardPolicy(), settings_.reward_policy.has_value());
      if (settings_.reward_policy) {
        const auto policy = request.getTask().getRewardPolicy();
        EXPECT_EQ(policy.getKind(), schema::RewardPolicyKind::SPEEDUP_THRESHOLD);
        EXPECT_EQ(policy.getMinSpeedup(), settings_.reward_policy->min_speedup);
      }
      eval_task_[item.work_id] = request.getTask().getId().cStr();
      ids.push_back(item.work_id);
    }
    return ids;
  }

  std::vector<LearnerTask> tasks_;
  StepSettings settings_;
  std::uint64_t next_work_ = 1;
  std::uint64_t next_group_ = 1;
  transport::TimePoint now_ = transport::Clock::now();
  std::vector<std::pair<std::uint64_t, std::uint64_t>> rollouts_;  // work id, group
  std::map<std::uint64_t, std::string> eval_task_;  // eval work id -> the task it judges
};

TEST_F(StepTrackerTest, GroupFinishesWithZScoredAdvantages) {
  auto tracker = start(1);
  tracker->handle(candidate(0, 1));
  tracker->handle(candidate(0, 0));
  tracker->handle(candidate(0, 0));  // a repeat of sample 0: dropped, not judged twice
  auto ids = evals(*tracker);
  ASSERT_EQ(ids.size(), 2u);
  EXPECT_EQ(tracker->counts().duplicate_candidates, 1u);
  tracker->handle(verdict(ids[0], 0.0f));  // sample 1
  EXPECT_FALSE(tracker->done());
  tracker->handle(verdict(ids[1], 1.0f));  // sample 0
  ASSERT_TRUE(tracker->done());
  auto finished = tracker->take_finished();
  ASSERT_EQ(finished.size(), 1u);
  ASSERT_TRUE(finished[0].complete);
  ASSERT_EQ(finished[0].samples.size(), 2u);
  EXPECT_EQ(finished[0].samples[0].sample_index, 0u);
  EXPECT_GT(finished[0].samples[0].advantage, 0.99);
  EXPECT_LT(finished[0].samples[1].advantage, -0.99);
  EXPECT_EQ(finished[0].samples[1].response_text, "text 1");
  EXPECT_EQ(tracker->counts().verdicts, 2u);
  EXPECT_EQ(tracker->counts().correct, 1u);
}

// The update scores each sample at the temperature it was drawn at (TraceSample::temperature):
// the step's, which its phase's sampling sets.
TEST_F(StepTrackerTest, TracesCarryTheStepsSamplingTemperature) {
  settings_.temperature = 1.3;
  auto tracker = start(1);
  tracker->handle(candidate(0, 0));
  tracker->handle(candidate(0, 1));
  auto ids = evals(*tracker);
  ASSERT_EQ(ids.size(), 2u);
  tracker->handle(verdict(ids[0], 1.0f));
  tracker->handle(verdict(ids[1], 0.0f));
  auto finished = tracker->take_finished();
  ASSERT_EQ(finished.size(), 1u);
  ASSERT_EQ(finished[0].samples.size(), 2u);
  for (const auto& sample : finished[0].samples) EXPECT_EQ(sample.trace.temperature, 1.3);
}

// An rl phase under a binary reward asks for no timing (run_loop.h: phase_timing); evals() checks
// every request carries the setting.
TEST_F(StepTrackerTest, EvaluationRequestsCarryWhetherToTime) {
  for (const bool timed : {true, false}) {
    settings_.want_timing = timed;
    rollouts_.clear();
    auto tracker = start(1);
    tracker->handle(candidate(0, 0));
    EXPECT_EQ(evals(*tracker).size(), 1u);
  }
}

// A phase's own reward policy rides on every evaluation request (evals() checks it); without
// one the task carries none, and the reward service applies its reward.policy.
TEST_F(StepTrackerTest, EvaluationRequestsCarryThePhasesRewardPolicy) {
  for (const bool own : {true, false}) {
    settings_.reward_policy.reset();
    if (own) settings_.reward_policy = RewardPolicyOptions{RewardPolicy::kSpeedupThreshold, 1.3};
    rollouts_.clear();
    auto tracker = start(1);
    tracker->handle(candidate(0, 0));
    EXPECT_EQ(evals(*tracker).size(), 1u);
  }
}

TEST_F(StepTrackerTest, ConstantGroupDroppedAndStaleCandidateNotJudged) {
  auto tracker = start(1);
  tracker->handle(candidate(0, 0, /*version=*/3));  // 3 + 1 < 5: too stale
  tracker->handle(candidate(0, 1, /*version=*/4));  // within the bound
  auto ids = evals(*tracker);
  ASSERT_EQ(ids.size(), 1u);
  EXPECT_EQ(tracker->counts().stale_dropped, 1u);
  tracker->handle(verdict(ids[0], 1.0f));
  ASSERT_TRUE(tracker->done());
  auto finished = tracker->take_finished();
  EXPECT_TRUE(finished[0].complete);
  EXPECT_TRUE(finished[0].dropped);  // one judged sample: no signal
  EXPECT_EQ(tracker->counts().groups_dropped, 1u);
}

TEST_F(StepTrackerTest, RolloutErrorAndTimeoutSkipGroupsWithoutHanging) {
  auto tracker = start(2);
  tracker->handle(candidate(0, 0));
  auto ids = evals(*tracker);
  tracker->handle(error(rollouts_[0].first));  // no more candidates for group 0
  EXPECT_FALSE(tracker->done());               // its one evaluation is still out
  tracker->handle(verdict(ids[0], 1.0f));
  auto finished = tracker->take_finished();
  ASSERT_EQ(finished.size(), 1u);
  EXPECT_FALSE(finished[0].complete);
  EXPECT_EQ(finished[0].samples.size(), 1u);  // kept, with advantage 0
  EXPECT_EQ(finished[0].samples[0].advantage, 0.0);

  tracker->expire(now_ + std::chrono::seconds(5), std::chrono::seconds(10));
  EXPECT_FALSE(tracker->done());
  tracker->expire(now_ + std::chrono::seconds(11), std::chrono::seconds(10));
  ASSERT_TRUE(tracker->done());
  EXPECT_EQ(tracker->counts().groups_skipped, 2u);
  EXPECT_EQ(tracker->counts().rollout_errors, 1u);
  tracker->handle(candidate(1, 0));  // late: its group is gone
  EXPECT_TRUE(evals(*tracker).empty());
}

// A skipped group's work that nobody waits for any more (its rollout request and the evaluations
// still without a verdict) is handed out once, for the dispatcher to withdraw what is still
// queued; a finished group's work is not.
TEST_F(StepTrackerTest, SkippedGroupsHandOutTheWorkNobodyWaitsFor) {
  auto tracker = start(2);
  tracker->handle(candidate(0, 0));
  tracker->handle(candidate(0, 1));
  auto judged = evals(*tracker);
  ASSERT_EQ(judged.size(), 2u);
  tracker->handle(verdict(judged[0], 1.0f));
  tracker->handle(verdict(judged[1], 0.0f));
  ASSERT_EQ(tracker->take_finished().size(), 1u);  // group 0, complete
  EXPECT_TRUE(tracker->take_unwanted().empty());

  tracker->handle(candidate(1, 0));
  auto pending = evals(*tracker);
  ASSERT_EQ(pending.size(), 1u);
  tracker->expire(now_ + std::chrono::seconds(11), std::chrono::seconds(10));
  ASSERT_TRUE(tracker->done());
  std::vector<std::uint64_t> unwanted = tracker->take_unwanted();
  std::sort(unwanted.begin(), unwanted.end());
  std::vector<std::uint64_t> expected = {rollouts_[1].first, pending[0]};
  std::sort(expected.begin(), expected.end());
  EXPECT_EQ(unwanted, expected);
  EXPECT_TRUE(tracker->take_unwanted().empty());
}

TEST_F(StepTrackerTest, EvaluationErrorLosesOneSample) {
  auto tracker = start(1);
  tracker->handle(candidate(0, 0));
  tracker->handle(candidate(0, 1));
  auto ids = evals(*tracker);
  tracker->handle(error(ids[0]));
  tracker->handle(verdict(ids[1], 0.0f));
  ASSERT_TRUE(tracker->done());
  auto finished = tracker->take_finished();
  EXPECT_TRUE(finished[0].complete);
  EXPECT_EQ(finished[0].samples.size(), 1u);
  EXPECT_EQ(tracker->counts().eval_errors, 1u);
  tracker->handle(verdict(999, 1.0f));
  EXPECT_EQ(tracker->counts().unexpected_results, 1u);
}

TEST_F(StepTrackerTest, NonFiniteRewardIsNotUsed) {
  auto tracker = start(1);
  tracker->handle(candidate(0, 0));
  tracker->handle(candidate(0, 1));
  auto ids = evals(*tracker);
  tracker->handle(verdict(ids[0], std::nanf("")));
  tracker->handle(verdict(ids[1], 1.0f));
  ASSERT_TRUE(tracker->done());
  auto finished = tracker->take_finished();
  ASSERT_EQ(finished[0].samples.size(), 1u);
  EXPECT_EQ(finished[0].samples[0].sample_index, 1u);
  EXPECT_FALSE(std::isnan(finished[0].samples[0].advantage));
  EXPECT_EQ(tracker->counts().eval_errors, 1u);
}

// A worker's answer to something it was not asked (another task, a reward no policy gives, a 1
// for a kernel that is not correct) is not used: a buggy or hostile peer cannot inject rewards.
TEST_F(StepTrackerTest, AnswersToOtherQuestionsAreNotUsed) {
  settings_.samples_per_task = 4;
  auto tracker = start(2);
  auto other_task = result(rollouts_[0].first, [&](Body::Builder body) {
    auto c = body.initCandidate();
    c.setSampleIndex(3);
    c.setTaskId(tasks_[1].id);
    c.setPolicyVersion(5);
  });
  tracker->handle(std::move(other_task));
  EXPECT_EQ(tracker->counts().unexpected_results, 1u);
  for (std::uint32_t i = 0; i < 4; ++i) tracker->handle(candidate(0, i));
  auto ids = evals(*tracker);
  ASSERT_EQ(ids.size(), 4u);
  eval_task_[ids[0]] = tasks_[1].id;  // a verdict naming the other task
  tracker->handle(verdict(ids[0], 1.0f));
  tracker->handle(verdict(ids[1], 0.5f));  // no reward policy gives 0.5
  tracker->handle(result(ids[2], [&](Body::Builder body) {
    auto v = body.initVerdict();
    v.setTaskId(tasks_[0].id);
    v.setReward(1.0f);  // but not correct
    v.setCompiled(true);
  }));
  tracker->handle(verdict(ids[3], 1.0f));
  EXPECT_EQ(tracker->counts().eval_errors, 3u);
  EXPECT_EQ(tracker->counts().verdicts, 1u);
}

// The CPU reward modes reward what they checked (an extraction, a build), never correctness.
TEST_F(StepTrackerTest, ACpuModesRewardNeedsNoCorrectKernel) {
  settings_.reward_mode = "compile_only";
  auto tracker = start(1);
  tracker->handle(candidate(0, 0));
  tracker->handle(candidate(0, 1));
  auto ids = evals(*tracker);
  for (std::uint64_t id : ids) {
    tracker->handle(result(id, [&](Body::Builder body) {
      auto v = body.initVerdict();
      v.setTaskId(eval_task_[id]);
      v.setReward(1.0f);
      v.setCompiled(true);
    }));
  }
  EXPECT_EQ(tracker->counts().verdicts, 2u);
  EXPECT_EQ(tracker->counts().eval_errors, 0u);
}

// A verdict the reward service could not reach even on its retry (internalError,
// sandboxUnavailable) is the candidate's failure by default: reward 0 in its group's z-scores and
// trained on, so that no fault is a pass a candidate could provoke (issue 50 item 2); counted in
// internal_errors and its share.
TEST_F(StepTrackerTest, ServiceFaultVerdictIsScoredAsAFailureByDefault) {
  std::vector<FinishedGroup> finished;
  StepCounts c;
  ASSERT_NO_FATAL_FAILURE(judge_fault_one_zero(&finished, &c));
  EXPECT_TRUE(finished[0].samples[0].scored);
  // z-scores of {0, 1, 0}: -1/sqrt(2), sqrt(2), -1/sqrt(2) (the epsilon in the std aside)
  EXPECT_NEAR(finished[0].samples[0].advantage, -std::sqrt(0.5), 1e-4);
  EXPECT_NEAR(finished[0].samples[0].trace.advantage, -std::sqrt(0.5), 1e-4);
  EXPECT_NEAR(finished[0].samples[1].advantage, std::sqrt(2.0), 1e-4);
  EXPECT_NEAR(finished[0].samples[2].advantage, -std::sqrt(0.5), 1e-4);
  EXPECT_EQ(c.verdicts, 3u);
  EXPECT_EQ(c.eval_errors, 0u);
  EXPECT_EQ(c.internal_errors, 1u);
  EXPECT_EQ(c.unscored_internal_errors, 0u);
  EXPECT_DOUBLE_EQ(c.reward_sum, 1.0);
  EXPECT_DOUBLE_EQ(internal_error_share(c), 1.0 / 3.0);
}

// Whatever reward a faulted verdict carries (a worker outside reward mode full may send 1), it
// counts 0 in its group, and it is not counted correct.
TEST_F(StepTrackerTest, AServiceFaultCountsZeroWhateverRewardItCarries) {
  settings_.reward_mode = "compile_only";  // where a reward of 1 need not mean correct
  auto tracker = start(1);
  tracker->handle(candidate(0, 0));
  tracker->handle(candidate(0, 1));
  auto ids = evals(*tracker);
  tracker->handle(verdict(ids[0], 1.0f, schema::FailureClass::SANDBOX_UNAVAILABLE));
  tracker->handle(verdict(ids[1], 1.0f));
  ASSERT_TRUE(tracker->done());
  auto finished = tracker->take_finished();
  EXPECT_FALSE(finished[0].dropped);  // {0, 1}: mixed
  EXPECT_LT(finished[0].samples[0].advantage, -0.99);
  EXPECT_GT(finished[0].samples[1].advantage, 0.99);
  EXPECT_EQ(tracker->counts().correct, 1u);
  EXPECT_DOUBLE_EQ(tracker->counts().reward_sum, 1.0);
  EXPECT_EQ(scored_reward(finished[0].samples[0].verdict.root().getBody().getVerdict()), 0.0);
}

// learner.internal_errors: unscored keeps the old behaviour: the fault is logged but says nothing
// about the candidate, so it stays out of its group's z-scores and of the update.
TEST_F(StepTrackerTest, UnscoredServiceFaultVerdictIsKeptButNotScored) {
  settings_.internal_errors = InternalErrorScoring::kUnscored;
  std::vector<FinishedGroup> finished;
  StepCounts c;
  ASSERT_NO_FATAL_FAILURE(judge_fault_one_zero(&finished, &c));  // all three reach the reward log
  EXPECT_FALSE(finished[0].samples[0].scored);
  EXPECT_EQ(finished[0].samples[0].advantage, 0.0);
  EXPECT_EQ(finished[0].samples[0].trace.advantage, 0.0);
  // z-scored over the two judged samples alone: +1 and -1, as without the fault
  EXPECT_GT(finished[0].samples[1].advantage, 0.99);
  EXPECT_LT(finished[0].samples[2].advantage, -0.99);
  EXPECT_EQ(c.verdicts, 2u);
  EXPECT_EQ(c.eval_errors, 1u);
  EXPECT_EQ(c.internal_errors, 1u);
  EXPECT_EQ(c.unscored_internal_errors, 1u);
  EXPECT_DOUBLE_EQ(internal_error_share(c), 1.0 / 3.0);  // of every verdict, scored or not
}

TEST_F(StepTrackerTest, UnscoredGroupOfOneJudgedSampleBesideAServiceFaultIsDropped) {
  settings_.internal_errors = InternalErrorScoring::kUnscored;
  auto tracker = start(1);
  tracker->handle(candidate(0, 0));
  tracker->handle(candidate(0, 1));
  auto ids = evals(*tracker);
  tracker->handle(verdict(ids[0], 0.0f, schema::FailureClass::SANDBOX_UNAVAILABLE));
  tracker->handle(verdict(ids[1], 1.0f));
  ASSERT_TRUE(tracker->done());
  auto finished = tracker->take_finished();
  EXPECT_TRUE(finished[0].dropped);  // one scored sample: no signal
  EXPECT_EQ(finished[0].samples[1].advantage, 0.0);
  EXPECT_EQ(tracker->counts().correct, 1u);
}

TEST_F(StepTrackerTest, NoVerdictIsNoInternalErrorShare) {
  auto tracker = start(1);
  EXPECT_TRUE(std::isnan(internal_error_share(tracker->counts())));
}

// Scripted groups: texts are the same only when their bytes are; a group is mixed when any two
// of its rewards differ, whatever its texts.
TEST(GroupVarietyTest, CountsDistinctTextsAndMixedRewards) {
  const std::vector<JudgedAnswer> one_text(8, JudgedAnswer{"y = x + 1\n", 0.0});
  GroupVariety g = group_variety(one_text);
  EXPECT_EQ(g.samples, 8u);
  EXPECT_EQ(g.distinct_texts, 1u);
  EXPECT_FALSE(g.mixed);

  // A trailing space or another case is another answer.
  g = group_variety({{"a", 1.0}, {"a ", 1.0}, {"A", 1.0}, {"a", 1.0}});
  EXPECT_EQ(g.samples, 4u);
  EXPECT_EQ(g.distinct_texts, 3u);
  EXPECT_FALSE(g.mixed);

  // One text judged two ways (a flaky judge) is one text in a mixed group.
  g = group_variety({{"k", 1.0}, {"k", 0.0}});
  EXPECT_EQ(g.distinct_texts, 1u);
  EXPECT_TRUE(g.mixed);

  g = group_variety({{"a", 0.0}, {"b", 0.0}, {"c", 0.0}, {"d", 1.0}});
  EXPECT_EQ(g.distinct_texts, 4u);
  EXPECT_TRUE(g.mixed);

  g = group_variety({});
  EXPECT_EQ(g.samples, 0u);
  EXPECT_EQ(g.distinct_texts, 0u);
  EXPECT_FALSE(g.mixed);
}

// The step's exploration counts: every complete group with a scored sample, dropped ones too; a
// service fault left unscored is not one of its group's answers; a skipped group and a complete
// group whose every evaluation failed were not judged.
TEST_F(StepTrackerTest, CountsHowMuchEachJudgedGroupExplored) {
  settings_.samples_per_task = 3;
  settings_.internal_errors = InternalErrorScoring::kUnscored;
  auto tracker = start(5);
  EXPECT_EQ(tracker->counts().exploration.group_size, 3u);
  const auto judge = [&](std::size_t group, const std::vector<std::string>& texts,
                         const std::vector<float>& rewards, std::size_t faulted = 3) {
    for (std::uint32_t i = 0; i < texts.size(); ++i) {
      tracker->handle(candidate(group, i, 5, texts[i]));
    }
    const auto ids = evals(*tracker);
    ASSERT_EQ(ids.size(), texts.size());
    for (std::size_t i = 0; i < ids.size(); ++i) {
      tracker->handle(i == faulted ? verdict(ids[i], 0.0f, schema::FailureClass::INTERNAL_ERROR)
                                   : verdict(ids[i], rewards[i]));
    }
  };
  judge(0, {"a", "a", "b"}, {1, 0, 0});                 // mixed, 2 texts
  judge(1, {"a", "a", "a"}, {0, 0, 0});                 // dropped, 1 text
  judge(2, {"c", "d", "e"}, {0, 1, 1}, /*faulted=*/0);  // dropped: d and e, both 1
  for (std::uint32_t i = 0; i < 3; ++i) tracker->handle(candidate(3, i));
  for (const std::uint64_t id : evals(*tracker)) tracker->handle(error(id));  // complete, unjudged
  tracker->handle(error(rollouts_[4].first));                                 // skipped
  ASSERT_TRUE(tracker->done());
  EXPECT_EQ(tracker->counts().groups_dropped, 3u);
  EXPECT_EQ(tracker->counts().groups_skipped, 1u);

  const rewardlog::ExplorationCounts& e = tracker->counts().exploration;
  EXPECT_EQ(e.groups_judged, 3u);
  EXPECT_EQ(e.groups_mixed, 1u);
  EXPECT_EQ(e.judged_samples, 8u);
  EXPECT_EQ(e.distinct_texts, 5u);
  EXPECT_EQ(e.dropped_groups_judged, 2u);
  EXPECT_EQ(e.dropped_distinct_texts, 3u);
}

}  // namespace
}  // namespace dice
