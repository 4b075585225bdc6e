// Work nobody should wait for or judge. DispatcherState's attempt cap: an item whose worker is
// lost on every dispatch (a candidate that kills the reward worker judging it) is answered by the
// dispatcher itself after DispatcherOptions::max_attempts dispatches instead of going round every
// worker. cancel(): queued work whose answer is no longer wanted never reaches a worker, and work
// a worker holds is cancelled there, its answer dropped and its slot freed by the worker's ack.
#include <gtest/gtest.h>

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "net/transport/dispatcher_state.h"

namespace dice::transport {
namespace {

using Body = schema::Envelope::Body;

constexpr int kIntervalMs = 100;

wire::Decoded<schema::Envelope> decode(const std::string& bytes) {
  auto decoded = wire::decode_envelope(bytes);
  EXPECT_TRUE(decoded.ok()) << decoded.status().to_string();
  return std::move(decoded).value();
}

// An EvalRequest envelope as the learner's StepTracker sends one.
std::string eval_request(std::uint64_t work_id) {
  capnp::MallocMessageBuilder message;
  auto request = wire::init_envelope(message, "learner", "run-7").getBody().initEvalRequest();
  request.setWorkId(work_id);
  request.initTask().setId("task-3");
  auto candidate = request.initCandidate();
  candidate.setRunId("run-7");
  candidate.setStep(12);
  candidate.setGroup(40);
  candidate.setSampleIndex(5);
  candidate.setPolicyVersion(9);
  candidate.setText("import torch  # kills its judge");
  return wire::encode(message);
}

class LostWorkTest : public ::testing::Test {
 protected:
  explicit LostWorkTest(std::uint32_t max_attempts = 3) : state_(options(max_attempts)) {}

  static DispatcherOptions options(std::uint32_t max_attempts) {
    DispatcherOptions o;
    o.heartbeat_interval_ms = kIntervalMs;
    o.misses_before_dead = 5;
    o.max_attempts = max_attempts;
    return o;
  }

  template <typename Fill>
  void from(const std::string& worker, Fill fill) {
    capnp::MallocMessageBuilder message;
    fill(wire::init_envelope(message, worker, "run-7").getBody());
    state_.handle(routing_[worker], decode(wire::encode(message)), now_);
  }
  // Hello and one credit from `worker` over a new connection `routing`.
  void join(const std::string& worker, const std::string& routing) {
    routing_[worker] = routing;
    from(worker, [&](Body::Builder b) {
      b.initHello().setWorkerId(worker);
      b.getHello().setRole(schema::Role::REWARD);
    });
    from(worker, [&](Body::Builder b) { b.initCredit().setCredits(1); });
  }
  // `worker`'s verdict on `work_id`, carrying the item's ack (its slot's credit).
  void verdict_with_ack(const std::string& worker, std::uint64_t work_id) {
    capnp::MallocMessageBuilder message;
    auto envelope = wire::init_envelope(message, worker, "run-7");
    envelope.getBody().initVerdict().setWorkId(work_id);
    envelope.initAck().setWorkId(work_id);
    envelope.getAck().setCredits(1);
    state_.handle(routing_[worker], decode(wire::encode(message)), now_);
  }
  // Ticks; the worker that got work item `work_id`, or "".
  std::string dispatched_to(std::uint64_t work_id) {
    state_.tick(now_);
    std::string to;
    for (const Outbound& out : state_.take_outbox()) {
      if (out.work_id == work_id) to = state_.worker_for_routing(out.routing_id);
    }
    return to;
  }
  // `worker` goes silent until it is declared dead; the others keep talking.
  void silence(const std::string& worker) {
    now_ += std::chrono::milliseconds(kIntervalMs * 5 + 1);
    for (const auto& entry : routing_) {
      if (entry.first != worker) {
        from(entry.first, [&](Body::Builder b) { b.initHeartbeat().setWorkerId(entry.first); });
      }
    }
    state_.tick(now_);
    state_.take_outbox();
    routing_.erase(worker);
  }
  // The results queued, in order.
  std::vector<WorkResult> results() {
    std::vector<WorkResult> out;
    while (state_.has_result()) out.push_back(state_.pop_result());
    return out;
  }

  DispatcherState state_;
  TimePoint now_ = TimePoint() + std::chrono::hours(1);
  std::map<std::string, std::string> routing_;  // worker id -> its connection's routing id
};

TEST_F(LostWorkTest, AnEvaluationWhoseWorkerIsLostOnEveryDispatchIsJudgedWorkerLost) {
  for (const char* w : {"w1", "w2", "w3", "w4"}) join(w, std::string("r-") + w);
  ASSERT_TRUE(state_.add_work(WorkItem{7, eval_request(7), schema::Role::REWARD}).ok());

  // Lost three times: twice as a process that restarted (Hello on a new connection), then as a
  // worker that went silent and was declared dead. The first two losses send it again.
  std::vector<std::string> holders;
  for (int attempt = 1; attempt <= 3; ++attempt) {
    const std::string worker = dispatched_to(7);
    ASSERT_FALSE(worker.empty()) << "attempt " << attempt << " was not sent";
    holders.push_back(worker);
    if (attempt < 3) {
      join(worker, routing_[worker] + "-restarted");
    } else {
      silence(worker);
    }
  }
  EXPECT_EQ(dispatched_to(7), "") << "sent a fourth time";

  std::vector<WorkResult> answers = results();
  ASSERT_EQ(answers.size(), 1u);
  EXPECT_EQ(answers[0].work_id, 7u);
  auto body = answers[0].envelope.root().getBody();
  ASSERT_EQ(body.which(), Body::VERDICT);
  auto verdict = body.getVerdict();
  EXPECT_EQ(verdict.getFailure(), schema::FailureClass::WORKER_LOST);
  EXPECT_EQ(verdict.getReward(), 0.0f);
  EXPECT_FALSE(verdict.getCompiled());
  EXPECT_FALSE(verdict.getCorrect());
  // The candidate's identity, so the learner scores it and the reward log files it.
  EXPECT_EQ(verdict.getWorkId(), 7u);
  EXPECT_EQ(std::string(verdict.getTaskId().cStr()), "task-3");
  EXPECT_EQ(std::string(verdict.getRunId().cStr()), "run-7");
  EXPECT_EQ(verdict.getStep(), 12u);
  EXPECT_EQ(verdict.getGroup(), 40u);
  EXPECT_EQ(verdict.getSampleIndex(), 5u);
  EXPECT_EQ(verdict.getPolicyVersion(), 9u);
  const std::string excerpt = verdict.getLogExcerpt().cStr();
  for (const std::string& worker : holders) {
    EXPECT_NE(excerpt.find(worker), std::string::npos) << excerpt;
  }

  auto stats = state_.stats(now_);
  EXPECT_EQ(stats.given_up, 1u);
  EXPECT_EQ(stats.requeued, 2u);
  EXPECT_EQ(stats.pending, 0u);
  EXPECT_EQ(stats.in_flight, 0u);

  // A late verdict of the last restarted holder is a duplicate, never a second answer.
  from(holders[1], [](Body::Builder b) { b.initVerdict().setWorkId(7); });
  EXPECT_FALSE(state_.has_result());
  EXPECT_EQ(state_.stats(now_).duplicate_results, 1u);
}

TEST_F(LostWorkTest, OtherWorkOfTheLostWorkersIsStillSentAgain) {
  join("w1", "r-w1");
  join("w2", "r-w2");
  ASSERT_TRUE(state_.add_work(WorkItem{1, eval_request(1), schema::Role::REWARD}).ok());
  for (int attempt = 1; attempt <= 2; ++attempt) {
    const std::string worker = dispatched_to(1);
    join(worker, routing_[worker] + "-" + std::to_string(attempt));
  }
  // Lost twice of three: item 1 is sent again, and a fresh item is not given up with it.
  ASSERT_TRUE(state_.add_work(WorkItem{2, eval_request(2), schema::Role::REWARD}).ok());
  state_.tick(now_);
  std::vector<std::uint64_t> sent;
  for (const Outbound& out : state_.take_outbox()) {
    if (out.work_id != 0) sent.push_back(out.work_id);
  }
  EXPECT_EQ(sent, (std::vector<std::uint64_t>{1, 2}));
  EXPECT_FALSE(state_.has_result());
  EXPECT_EQ(state_.stats(now_).given_up, 0u);
}

// A worker with two slots lost while it judges a poison item and an honest one cannot say which
// took it down: both are sent again, each alone on a worker that holds nothing else, and only
// those lone losses count. The poison item is answered workerLost after max_attempts (3) of
// them; the honest one is judged by its worker, never spent by the poison's losses.
TEST_F(LostWorkTest, AnItemLostBesideAnotherIsSentAgainAloneAndNotSpentByItsLosses) {
  join("w1", "r-w1");
  from("w1", [](Body::Builder b) { b.initCredit().setCredits(1); });  // two slots
  ASSERT_TRUE(state_.add_work(WorkItem{1, eval_request(1), schema::Role::REWARD}).ok());
  ASSERT_TRUE(state_.add_work(WorkItem{2, eval_request(2), schema::Role::REWARD}).ok());
  EXPECT_EQ(dispatched_to(2), "w1") << "both items on w1";
  join("w1", "r-w1-restarted");  // lost with both
  from("w1", [](Body::Builder b) { b.initCredit().setCredits(1); });

  // w1 takes item 1 alone: though it has a second credit, item 2 waits for a worker of its own.
  EXPECT_EQ(dispatched_to(2), "");
  join("w2", "r-w2");
  EXPECT_EQ(dispatched_to(2), "w2");
  for (int restart = 1; restart <= 3; ++restart) {  // item 1 kills w1 on each lone dispatch
    join("w1", "r-w1-" + std::to_string(restart));
    from("w1", [](Body::Builder b) { b.initCredit().setCredits(1); });
    EXPECT_EQ(dispatched_to(1), restart < 3 ? "w1" : "") << "restart " << restart;
  }
  verdict_with_ack("w2", 2);

  std::map<std::uint64_t, schema::FailureClass> failure_of;
  for (WorkResult& result : results()) {
    failure_of[result.work_id] = result.envelope.root().getBody().getVerdict().getFailure();
  }
  EXPECT_EQ(failure_of.size(), 2u);
  EXPECT_EQ(failure_of[1], schema::FailureClass::WORKER_LOST);
  EXPECT_NE(failure_of[2], schema::FailureClass::WORKER_LOST);
  EXPECT_EQ(state_.stats(now_).given_up, 1u);
}

class LostWorkCapOfTwoTest : public LostWorkTest {
 protected:
  LostWorkCapOfTwoTest() : LostWorkTest(2) {}
};

TEST_F(LostWorkCapOfTwoTest, ARolloutRequestLostOnEveryDispatchFailsWithAnError) {
  join("w1", "r-w1");
  // Not an EvalRequest (here not even an envelope): the answer is an Error for the item.
  ASSERT_TRUE(state_.add_work(WorkItem{5, "rollout request", std::nullopt}).ok());
  join(dispatched_to(5), "r-w1-a");
  join(dispatched_to(5), "r-w1-b");
  std::vector<WorkResult> answers = results();
  ASSERT_EQ(answers.size(), 1u);
  auto body = answers[0].envelope.root().getBody();
  ASSERT_EQ(body.which(), Body::ERROR);
  EXPECT_EQ(body.getError().getWorkId(), 5u);
  EXPECT_NE(std::string(body.getError().getMessage().cStr()).find("lost"), std::string::npos);
}

TEST_F(LostWorkCapOfTwoTest, AVerdictThatCameBeforeTheLossIsTheOnlyAnswer) {
  join("w1", "r-w1");
  ASSERT_TRUE(state_.add_work(WorkItem{8, eval_request(8), schema::Role::REWARD}).ok());
  join(dispatched_to(8), "r-w1-a");
  ASSERT_EQ(dispatched_to(8), "w1");
  // Judged, but the worker died before its ack: the item is complete, not answered twice.
  from("w1", [](Body::Builder b) { b.initVerdict().setWorkId(8); });
  join("w1", "r-w1-b");
  std::vector<WorkResult> answers = results();
  ASSERT_EQ(answers.size(), 1u);
  EXPECT_EQ(answers[0].envelope.root().getBody().getVerdict().getFailure(),
            schema::FailureClass::NONE);
  EXPECT_EQ(state_.stats(now_).given_up, 1u);
  EXPECT_EQ(dispatched_to(8), "");
}

class NoAttemptCapTest : public LostWorkTest {
 protected:
  NoAttemptCapTest() : LostWorkTest(0) {}
};

TEST_F(NoAttemptCapTest, ZeroSendsAnItemAgainAfterEveryLoss) {
  join("w1", "r-w1");
  ASSERT_TRUE(state_.add_work(WorkItem{3, eval_request(3), schema::Role::REWARD}).ok());
  for (int attempt = 1; attempt <= 6; ++attempt) {
    ASSERT_EQ(dispatched_to(3), "w1") << "attempt " << attempt;
    join("w1", "r-w1-" + std::to_string(attempt));
  }
  EXPECT_FALSE(state_.has_result());
}

TEST_F(LostWorkTest, CancelledWorkStillQueuedIsNeverSent) {
  join("w1", "r-w1");
  for (std::uint64_t id = 1; id <= 3; ++id) {
    ASSERT_TRUE(state_.add_work(WorkItem{id, eval_request(id), schema::Role::REWARD}).ok());
  }
  ASSERT_EQ(dispatched_to(1), "w1");  // w1's one slot is busy; 2 and 3 wait

  EXPECT_TRUE(state_.cancel(2));
  EXPECT_FALSE(state_.cancel(2)) << "cancelled twice";
  EXPECT_FALSE(state_.cancel(99)) << "never submitted";
  auto stats = state_.stats(now_);
  EXPECT_EQ(stats.cancelled, 1u);
  EXPECT_EQ(stats.pending, 1u);
  EXPECT_EQ(stats.in_flight, 1u);

  // Item 1 is judged and its slot freed: the next item sent is 3, and 2 never is.
  verdict_with_ack("w1", 1);
  EXPECT_EQ(results().size(), 1u);
  state_.tick(now_);
  std::vector<std::uint64_t> sent;
  for (const Outbound& out : state_.take_outbox()) {
    if (out.work_id != 0) sent.push_back(out.work_id);
  }
  EXPECT_EQ(sent, std::vector<std::uint64_t>{3});
  EXPECT_EQ(state_.stats(now_).pending, 0u);
  // Its id is not free for new work: a result for it could still be about the old item.
  EXPECT_EQ(state_.add_work(WorkItem{2, eval_request(2), schema::Role::REWARD}).code(),
            StatusCode::kInvalidArgument);
}

// The Cancel envelopes in the outbox, as (worker id, work id).
std::vector<std::pair<std::string, std::uint64_t>> cancels_in(DispatcherState& state) {
  std::vector<std::pair<std::string, std::uint64_t>> cancels;
  for (const Outbound& out : state.take_outbox()) {
    auto decoded = wire::decode_envelope(*out.payload);
    if (!decoded.ok() || decoded->root().getBody().which() != Body::CANCEL) continue;
    EXPECT_EQ(out.work_id, 0u) << "a Cancel is no work item (never re-queued)";
    cancels.emplace_back(state.worker_for_routing(out.routing_id),
                         decoded->root().getBody().getCancel().getWorkId());
  }
  return cancels;
}

TEST_F(LostWorkTest, CancelledWorkAtAWorkerIsCancelledThereAndItsAnswerDropped) {
  join("w1", "r-w1");
  for (std::uint64_t id = 1; id <= 2; ++id) {
    ASSERT_TRUE(state_.add_work(WorkItem{id, eval_request(id), schema::Role::REWARD}).ok());
  }
  ASSERT_EQ(dispatched_to(1), "w1");  // w1's one slot is busy with 1; 2 waits

  EXPECT_TRUE(state_.cancel(1));
  using Cancels = std::vector<std::pair<std::string, std::uint64_t>>;
  EXPECT_EQ(cancels_in(state_), (Cancels{{"w1", 1}}));
  EXPECT_FALSE(state_.cancel(1)) << "cancelled twice";
  EXPECT_TRUE(cancels_in(state_).empty()) << "a second Cancel for the same item";
  auto stats = state_.stats(now_);
  EXPECT_EQ(stats.cancelled_in_flight, 1u);
  EXPECT_EQ(stats.cancelled, 0u);
  EXPECT_EQ(stats.in_flight, 1u) << "the slot stays busy until the worker acks";
  EXPECT_EQ(dispatched_to(2), "") << "sent before the worker freed its slot";

  // The verdict was already on its way: dropped; the ack it carries frees the slot for item 2.
  verdict_with_ack("w1", 1);
  EXPECT_TRUE(results().empty()) << "the answer of a cancelled item was delivered";
  stats = state_.stats(now_);
  EXPECT_EQ(stats.cancelled_results, 1u);
  EXPECT_EQ(stats.completed, 1u);
  EXPECT_EQ(stats.in_flight, 0u);
  EXPECT_EQ(dispatched_to(2), "w1");
  EXPECT_FALSE(state_.cancel(1)) << "completed";
}

TEST_F(LostWorkTest, AnAckAloneEndsACancelledItemAndLateAnswersAreDuplicates) {
  join("w1", "r-w1");
  ASSERT_TRUE(state_.add_work(WorkItem{1, eval_request(1), schema::Role::REWARD}).ok());
  ASSERT_EQ(dispatched_to(1), "w1");
  ASSERT_TRUE(state_.cancel(1));
  from("w1", [](Body::Builder b) {
    b.initAck().setWorkId(1);
    b.getAck().setCredits(1);
  });
  EXPECT_EQ(state_.stats(now_).completed, 1u);
  from("w1", [](Body::Builder b) { b.initVerdict().setWorkId(1); });
  EXPECT_TRUE(results().empty());
  EXPECT_EQ(state_.stats(now_).duplicate_results, 1u);
  EXPECT_EQ(state_.stats(now_).worker_list.at(0).credits, 1u);
}

TEST_F(LostWorkTest, ACancelledItemWhoseWorkerIsLostIsNeitherSentAgainNorAnswered) {
  join("w1", "r-w1");
  join("w2", "r-w2");
  ASSERT_TRUE(state_.add_work(WorkItem{7, eval_request(7), schema::Role::REWARD}).ok());
  const std::string holder = dispatched_to(7);
  ASSERT_FALSE(holder.empty());
  ASSERT_TRUE(state_.cancel(7));
  silence(holder);
  EXPECT_EQ(dispatched_to(7), "");
  EXPECT_TRUE(results().empty());
  auto stats = state_.stats(now_);
  EXPECT_EQ(stats.requeued, 0u);
  EXPECT_EQ(stats.given_up, 0u);
  EXPECT_EQ(stats.in_flight + stats.pending, 0u);
  EXPECT_FALSE(state_.cancel(7));
}

TEST_F(LostWorkTest, ACancelFromAWorkerIsAnUnexpectedMessage) {
  join("w1", "r-w1");
  ASSERT_TRUE(state_.add_work(WorkItem{1, eval_request(1), schema::Role::REWARD}).ok());
  ASSERT_EQ(dispatched_to(1), "w1");
  from("w1", [](Body::Builder b) { b.initCancel().setWorkId(1); });
  auto stats = state_.stats(now_);
  EXPECT_EQ(stats.unexpected_messages, 1u);
  EXPECT_EQ(stats.in_flight, 1u) << "a worker cannot cancel the learner's work";
}

}  // namespace
}  // namespace dice::transport
