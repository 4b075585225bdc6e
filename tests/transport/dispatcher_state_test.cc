// DispatcherState with a fake clock: credits, dead workers, duplicates, bounds, re-Hello.
#include "net/transport/dispatcher_state.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace dice::transport {
namespace {

using std::chrono::milliseconds;
using Body = schema::Envelope::Body;

constexpr int kIntervalMs = 100;

wire::Decoded<schema::Envelope> decode(capnp::MallocMessageBuilder& message) {
  auto decoded = wire::decode_envelope(wire::encode(message));
  EXPECT_TRUE(decoded.ok()) << decoded.status().to_string();
  return std::move(decoded).value();
}

class DispatcherStateTest : public ::testing::Test {
 protected:
  DispatcherStateTest() : state_(options()) {}

  static DispatcherOptions options() {
    DispatcherOptions o;
    o.heartbeat_interval_ms = kIntervalMs;
    o.misses_before_dead = 5;
    o.queue_capacity = 8;
    o.result_capacity = 100;
    return o;
  }

  // Sends a message from `worker` (routing id "r-<worker>" unless given).
  template <typename Fill>
  void from(const std::string& worker, Fill fill, std::string routing = "") {
    capnp::MallocMessageBuilder message;
    auto body = wire::init_envelope(message, worker, "run").getBody();
    fill(body);
    state_.handle(routing.empty() ? "r-" + worker : routing, decode(message), now_);
  }
  void hello(const std::string& worker, std::uint32_t credits, std::string routing = "",
             schema::Role role = schema::Role::ROLLOUT) {
    from(
        worker,
        [&](Body::Builder b) {
          b.initHello().setWorkerId(worker);
          b.getHello().setRole(role);
        },
        routing);
    if (credits > 0) credit(worker, credits, routing);
  }
  void credit(const std::string& worker, std::uint32_t n, std::string routing = "") {
    from(
        worker,
        [&](Body::Builder b) {
          b.initCredit().setWorkerId(worker);
          b.getCredit().setCredits(n);
        },
        routing);
  }
  void verdict(const std::string& worker, std::uint64_t work_id) {
    from(worker, [&](Body::Builder b) { b.initVerdict().setWorkId(work_id); });
  }
  void candidate(const std::string& worker, std::uint64_t work_id, std::uint32_t sample) {
    from(worker, [&](Body::Builder b) {
      b.initCandidate().setWorkId(work_id);
      b.getCandidate().setSampleIndex(sample);
    });
  }
  // A Verdict carrying its item's Ack (protocol 3), as WorkerConnection::finish(id, message) sends.
  void verdict_with_ack(const std::string& worker, std::uint64_t work_id, std::uint32_t credits) {
    capnp::MallocMessageBuilder message;
    auto envelope = wire::init_envelope(message, worker, "run");
    envelope.getBody().initVerdict().setWorkId(work_id);
    envelope.initAck().setWorkId(work_id);
    envelope.getAck().setCredits(credits);
    state_.handle("r-" + worker, decode(message), now_);
  }
  void ack(const std::string& worker, std::uint64_t work_id, std::uint32_t credits = 0) {
    from(worker, [&](Body::Builder b) {
      b.initAck().setWorkId(work_id);
      b.getAck().setCredits(credits);
    });
  }
  void heartbeat(const std::string& worker) {
    from(worker, [&](Body::Builder b) { b.initHeartbeat().setWorkerId(worker); });
  }
  void submit(std::uint64_t work_id, std::optional<schema::Role> role = std::nullopt) {
    Status s = state_.add_work(WorkItem{work_id, "work-" + std::to_string(work_id), role});
    ASSERT_TRUE(s.ok()) << s.to_string();
  }
  void advance(int ms) { now_ += milliseconds(ms); }

  // Ticks and returns work ids sent, by routing id; heartbeats are collected separately.
  std::map<std::string, std::vector<std::uint64_t>> tick() {
    state_.tick(now_);
    std::map<std::string, std::vector<std::uint64_t>> sent;
    for (Outbound& out : state_.take_outbox()) {
      if (out.work_id != 0) {
        EXPECT_EQ(*out.payload, "work-" + std::to_string(out.work_id));
        sent[out.routing_id].push_back(out.work_id);
      } else {
        auto decoded = wire::decode_envelope(*out.payload);
        EXPECT_TRUE(decoded.ok()) << decoded.status().to_string();
        if (!decoded.ok()) continue;
        EXPECT_EQ(decoded->root().getBody().which(), Body::HEARTBEAT);
        heartbeats_.emplace_back(out.routing_id,
                                 decoded->root().getBody().getHeartbeat().getWorkerId().cStr());
      }
    }
    return sent;
  }

  DispatcherState state_;
  TimePoint now_ = TimePoint() + std::chrono::hours(1);
  std::vector<std::pair<std::string, std::string>> heartbeats_;  // (routing id, addressed to)
};

TEST_F(DispatcherStateTest, WorkGoesOnlyToWorkersWithCredit) {
  for (std::uint64_t id = 1; id <= 3; ++id) submit(id);
  hello("w1", 0);
  EXPECT_TRUE(tick().empty());
  EXPECT_EQ(state_.stats(now_).pending, 3u);

  credit("w1", 2);
  auto sent = tick();
  EXPECT_EQ(sent["r-w1"], (std::vector<std::uint64_t>{1, 2}));
  EXPECT_TRUE(tick().empty());  // no credit left
  auto stats = state_.stats(now_);
  EXPECT_EQ(stats.pending, 1u);
  EXPECT_EQ(stats.in_flight, 2u);
  EXPECT_EQ(stats.credits, 0u);
}

TEST_F(DispatcherStateTest, WorkForARoleGoesOnlyToWorkersOfThatRole) {
  hello("roll", 4, "", schema::Role::ROLLOUT);
  hello("rew", 4, "", schema::Role::REWARD);
  submit(1, schema::Role::REWARD);
  submit(2, schema::Role::ROLLOUT);
  submit(3, schema::Role::REWARD);
  submit(4);  // any role
  auto sent = tick();
  auto has = [&](const std::string& routing, std::uint64_t id) {
    const auto& ids = sent[routing];
    return std::find(ids.begin(), ids.end(), id) != ids.end();
  };
  EXPECT_TRUE(has("r-rew", 1) && has("r-rew", 3) && !has("r-rew", 2));
  EXPECT_TRUE(has("r-roll", 2) && !has("r-roll", 1) && !has("r-roll", 3));
  EXPECT_TRUE(has("r-roll", 4) != has("r-rew", 4));  // any role: exactly one of them
}

TEST_F(DispatcherStateTest, AResultOfTheWrongKindForItsWorkIsDropped) {
  hello("roll", 4, "", schema::Role::ROLLOUT);
  submit(1, schema::Role::ROLLOUT);
  tick();
  // A verdict for rollout work (a buggy or hostile worker answering as the other role).
  verdict("roll", 1);
  EXPECT_FALSE(state_.has_result());
  EXPECT_EQ(state_.stats(now_).unexpected_messages, 1u);
  candidate("roll", 1, 0);
  ASSERT_TRUE(state_.has_result());
  EXPECT_EQ(state_.pop_result().work_id, 1u);
}

TEST_F(DispatcherStateTest, WorkWithoutAWorkerOfItsRoleDoesNotHoldUpOthers) {
  hello("roll", 4, "", schema::Role::ROLLOUT);
  submit(1, schema::Role::REWARD);  // no reward worker yet: waits
  submit(2, schema::Role::ROLLOUT);
  auto sent = tick();
  EXPECT_EQ(sent["r-roll"], (std::vector<std::uint64_t>{2}));
  EXPECT_EQ(state_.stats(now_).pending, 1u);
  hello("rew", 1, "", schema::Role::REWARD);
  sent = tick();
  EXPECT_EQ(sent["r-rew"], (std::vector<std::uint64_t>{1}));
  EXPECT_EQ(state_.stats(now_).pending, 0u);
}

TEST_F(DispatcherStateTest, SpreadsWorkToTheLeastLoadedWorker) {
  hello("w1", 4);
  hello("w2", 4);
  for (std::uint64_t id = 1; id <= 6; ++id) submit(id);
  auto sent = tick();
  EXPECT_EQ(sent["r-w1"].size(), 3u);
  EXPECT_EQ(sent["r-w2"].size(), 3u);
}

TEST_F(DispatcherStateTest, IdleWorkersTakeTurns) {
  hello("w1", 4);
  hello("w2", 4);
  hello("w3", 4);
  std::vector<std::string> order;
  for (std::uint64_t id = 1; id <= 6; ++id) {
    submit(id);
    for (auto& [routing, ids] : tick()) order.push_back(routing);
    verdict(state_.worker_for_routing(order.back()), id);  // done at once: every worker idle again
    ack(state_.worker_for_routing(order.back()), id);
    state_.pop_result();
  }
  EXPECT_EQ(order, (std::vector<std::string>{"r-w1", "r-w2", "r-w3", "r-w1", "r-w2", "r-w3"}));
}

TEST_F(DispatcherStateTest, SilentWorkerIsDeclaredDeadAndItsWorkRequeued) {
  hello("w1", 2);
  hello("w2", 0);
  submit(1);
  submit(2);
  EXPECT_EQ(tick()["r-w1"].size(), 2u);

  // w2 keeps talking, w1 goes quiet: just under the limit nothing happens.
  for (int i = 0; i < 5; ++i) {
    advance(kIntervalMs);
    heartbeat("w2");
    EXPECT_TRUE(tick().empty());
  }
  EXPECT_EQ(state_.stats(now_).workers, 2u);
  advance(1);
  heartbeat("w2");
  tick();
  auto stats = state_.stats(now_);
  EXPECT_EQ(stats.workers, 1u);
  EXPECT_EQ(stats.workers_dead, 1u);
  EXPECT_EQ(stats.requeued, 2u);
  EXPECT_EQ(stats.pending, 2u);

  // Lost together (which of them took w1 down is not known), each goes again alone, in
  // submission order: w2 gets the next once it holds nothing.
  credit("w2", 5);
  EXPECT_EQ(tick()["r-w2"], (std::vector<std::uint64_t>{1}));
  ack("w2", 1);
  EXPECT_EQ(tick()["r-w2"], (std::vector<std::uint64_t>{2}));
}

// After a Shutdown the workers go as told: a connection gone or a worker silent is not a death.
TEST_F(DispatcherStateTest, WorkersThatGoAfterAShutdownHaveLeftNotDied) {
  hello("w1", 1);
  hello("w2", 1);
  state_.broadcast_shutdown("shutdown");
  int shutdowns = 0;
  for (const Outbound& out : state_.take_outbox()) shutdowns += *out.payload == "shutdown";
  EXPECT_EQ(shutdowns, 2);
  // w1's connection is gone at the next heartbeat; w2 falls silent.
  advance(kIntervalMs);
  state_.tick(now_);
  for (const Outbound& out : state_.take_outbox()) {
    if (out.routing_id == "r-w1") state_.send_failed(out, /*unreachable=*/true);
  }
  EXPECT_EQ(state_.stats(now_).workers, 1u);
  advance(5 * kIntervalMs);
  tick();
  const DispatcherStats stats = state_.stats(now_);
  EXPECT_EQ(stats.workers, 0u);
  EXPECT_EQ(stats.workers_dead, 0u);
}

TEST_F(DispatcherStateTest, HeartbeatsGoOutEveryIntervalAddressedToTheWorker) {
  hello("w1", 0);
  tick();
  heartbeats_.clear();
  for (int i = 0; i < 3; ++i) {
    advance(kIntervalMs);
    heartbeat("w1");
    tick();
  }
  ASSERT_EQ(heartbeats_.size(), 3u);
  for (auto& [routing, addressed] : heartbeats_) {
    EXPECT_EQ(routing, "r-w1");
    EXPECT_EQ(addressed, "w1");
  }
}

TEST_F(DispatcherStateTest, UnknownPeerIsToldToSayHello) {
  heartbeat("stranger");
  tick();
  ASSERT_EQ(heartbeats_.size(), 1u);
  EXPECT_EQ(heartbeats_[0].first, "r-stranger");
  EXPECT_EQ(heartbeats_[0].second, "");
  verdict("stranger", 5);  // results from peers that never said Hello are dropped
  EXPECT_FALSE(state_.has_result());
  EXPECT_EQ(state_.stats(now_).unknown_results, 1u);
}

TEST_F(DispatcherStateTest, ResultsAndAcksCountOnce) {
  hello("w1", 1);
  submit(7);
  tick();
  verdict("w1", 7);
  verdict("w1", 7);  // at-least-once: the same part again
  ack("w1", 7);
  verdict("w1", 7);  // after completion
  ack("w1", 7);
  ASSERT_TRUE(state_.has_result());
  WorkResult result = state_.pop_result();
  EXPECT_EQ(result.work_id, 7u);
  EXPECT_EQ(result.worker_id, "w1");
  EXPECT_FALSE(state_.has_result());
  auto stats = state_.stats(now_);
  EXPECT_EQ(stats.completed, 1u);
  EXPECT_EQ(stats.duplicate_results, 3u);
  EXPECT_EQ(stats.in_flight, 0u);
  verdict("w1", 99);
  EXPECT_EQ(state_.stats(now_).unknown_results, 1u);
}

TEST_F(DispatcherStateTest, AckCarriesTheCreditOfTheFreedSlot) {
  hello("w1", 1);
  submit(1);
  submit(2);
  submit(3);
  EXPECT_EQ(tick()["r-w1"], std::vector<std::uint64_t>({1}));
  verdict("w1", 1);
  ack("w1", 1, /*credits=*/1);
  EXPECT_EQ(tick()["r-w1"], std::vector<std::uint64_t>({2}));
  // A late copy of an ack is a duplicate, but its slot was freed all the same.
  ack("w1", 1, /*credits=*/1);
  EXPECT_EQ(state_.stats(now_).duplicate_results, 1u);
  EXPECT_EQ(tick()["r-w1"], std::vector<std::uint64_t>({3}));
  EXPECT_EQ(state_.stats(now_).credits, 0u);
  // From a peer that never said Hello, the folded-in credit asks for a Hello, as a Credit would.
  ack("stranger", 9, /*credits=*/1);
  tick();
  ASSERT_FALSE(heartbeats_.empty());
  EXPECT_EQ(heartbeats_.back().first, "r-stranger");
  EXPECT_EQ(heartbeats_.back().second, "");
}

TEST_F(DispatcherStateTest, ResultCarryingItsAckCompletesTheItemOnce) {
  hello("w1", 1);
  submit(1);
  submit(2);
  EXPECT_EQ(tick()["r-w1"], std::vector<std::uint64_t>({1}));
  // One message: the result is delivered, then the item completes and its slot is credited.
  verdict_with_ack("w1", 1, /*credits=*/1);
  ASSERT_TRUE(state_.has_result());
  EXPECT_EQ(state_.pop_result().work_id, 1u);
  auto stats = state_.stats(now_);
  EXPECT_EQ(stats.completed, 1u);
  EXPECT_EQ(stats.results_delivered, 1u);
  EXPECT_EQ(tick()["r-w1"], std::vector<std::uint64_t>({2}));
  // A re-sent copy (at-least-once) is a duplicate result and a duplicate ack; its credit counts.
  verdict_with_ack("w1", 1, /*credits=*/1);
  EXPECT_FALSE(state_.has_result());
  stats = state_.stats(now_);
  EXPECT_EQ(stats.completed, 1u);
  EXPECT_EQ(stats.duplicate_results, 2u);
  EXPECT_EQ(stats.credits, 1u);
  // From a peer that never said Hello: dropped, counted, and answered with "send Hello".
  const std::size_t heartbeats_before = heartbeats_.size();
  verdict_with_ack("stranger", 9, /*credits=*/1);
  EXPECT_FALSE(state_.has_result());
  EXPECT_EQ(state_.stats(now_).unknown_results, 2u);  // the result and its ack
  tick();
  ASSERT_GT(heartbeats_.size(), heartbeats_before);
  EXPECT_EQ(heartbeats_.back().first, "r-stranger");
  EXPECT_EQ(heartbeats_.back().second, "");
}

TEST_F(DispatcherStateTest, ResultsOnlyFromWorkersTheItemWasSentTo) {
  hello("w1", 1);
  hello("w2", 0);
  submit(1);
  tick();
  // w2 never got item 1 (say, a stale id from before a learner restart): not a result for it.
  verdict("w2", 1);
  ack("w2", 1);
  EXPECT_FALSE(state_.has_result());
  auto stats = state_.stats(now_);
  EXPECT_EQ(stats.unknown_results, 2u);
  EXPECT_EQ(stats.in_flight, 1u);
  verdict("w1", 1);
  EXPECT_TRUE(state_.has_result());
}

TEST_F(DispatcherStateTest, CandidatesAreKeyedBySampleIndex) {
  hello("w1", 1);
  submit(3);
  tick();
  candidate("w1", 3, 0);
  candidate("w1", 3, 1);
  candidate("w1", 3, 1);
  int results = 0;
  while (state_.has_result()) {
    state_.pop_result();
    ++results;
  }
  EXPECT_EQ(results, 2);
}

TEST_F(DispatcherStateTest, RedispatchedWorkIsDeliveredOnceFromEitherWorker) {
  hello("slow", 1);
  submit(1);
  EXPECT_EQ(tick()["r-slow"].size(), 1u);
  advance(6 * kIntervalMs);
  tick();  // "slow" declared dead
  hello("fast", 1);
  EXPECT_EQ(tick()["r-fast"].size(), 1u);
  candidate("fast", 1, 0);
  ack("fast", 1);
  // "slow" was only slow: it says hello again and sends the same result late.
  hello("slow", 0);
  candidate("slow", 1, 0);
  ack("slow", 1);
  int results = 0;
  while (state_.has_result()) {
    state_.pop_result();
    ++results;
  }
  EXPECT_EQ(results, 1);
  EXPECT_EQ(state_.stats(now_).completed, 1u);
}

TEST_F(DispatcherStateTest, HelloOnTheSameConnectionKeepsWorkInFlight) {
  hello("w1", 2);
  submit(1);
  tick();
  hello("w1", 1);  // the worker lost sight of the learner for a while, same connection
  auto stats = state_.stats(now_);
  EXPECT_EQ(stats.in_flight, 1u);
  EXPECT_EQ(stats.requeued, 0u);
  EXPECT_EQ(stats.credits, 1u);  // reset, then the fresh Credit
}

TEST_F(DispatcherStateTest, HelloOnANewConnectionRequeuesTheOldOnesWork) {
  hello("w1", 2);
  submit(1);
  tick();
  hello("w1", 1, "r-w1-restarted");  // restarted process, same worker id
  auto stats = state_.stats(now_);
  EXPECT_EQ(stats.requeued, 1u);
  EXPECT_EQ(stats.workers, 1u);
  EXPECT_EQ(tick()["r-w1-restarted"], std::vector<std::uint64_t>{1});
}

TEST_F(DispatcherStateTest, QueueIsBoundedAndIdsAreChecked) {
  for (std::uint64_t id = 1; id <= 8; ++id) submit(id);
  EXPECT_TRUE(state_.queue_full());
  Status full = state_.add_work(WorkItem{9, "x", std::nullopt});
  EXPECT_EQ(full.code(), StatusCode::kUnavailable);
  EXPECT_EQ(state_.add_work(WorkItem{0, "x", std::nullopt}).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(state_.add_work(WorkItem{3, "x", std::nullopt}).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(state_.stats(now_).pending, 8u);
}

TEST(DispatcherStateResultBound, FullResultQueuePausesDispatch) {
  DispatcherOptions o;
  o.result_capacity = 1;
  DispatcherState state(o);
  TimePoint now{};
  auto send = [&](auto fill) {
    capnp::MallocMessageBuilder message;
    fill(wire::init_envelope(message, "w", "run").getBody());
    state.handle("r", decode(message), now);
  };
  send([](Body::Builder b) { b.initHello().setWorkerId("w"); });
  send([](Body::Builder b) { b.initCredit().setCredits(10); });
  ASSERT_TRUE(state.add_work(WorkItem{1, "a", std::nullopt}).ok());
  state.tick(now);
  send([](Body::Builder b) { b.initVerdict().setWorkId(1); });
  ASSERT_TRUE(state.add_work(WorkItem{2, "b", std::nullopt}).ok());
  state.take_outbox();
  state.tick(now);
  for (const Outbound& out : state.take_outbox()) EXPECT_EQ(out.work_id, 0u);  // none dispatched
  state.pop_result();
  state.tick(now);
  auto outbox = state.take_outbox();
  ASSERT_EQ(outbox.size(), 1u);
  EXPECT_EQ(outbox[0].work_id, 2u);
}

TEST_F(DispatcherStateTest, SendFailuresRequeue) {
  hello("w1", 2);
  submit(1);
  submit(2);
  state_.tick(now_);
  auto outbox = state_.take_outbox();
  std::vector<Outbound> work;
  for (auto& out : outbox) {
    if (out.work_id) work.push_back(out);
  }
  ASSERT_EQ(work.size(), 2u);
  state_.send_failed(work[0], /*unreachable=*/false);  // would block: retry later
  EXPECT_EQ(state_.stats(now_).credits, 1u);
  EXPECT_EQ(tick()["r-w1"], std::vector<std::uint64_t>{1});
  state_.send_failed(work[1], /*unreachable=*/true);  // peer gone: worker dead
  auto stats = state_.stats(now_);
  EXPECT_EQ(stats.workers, 0u);
  EXPECT_EQ(stats.pending, 2u);
  EXPECT_EQ(stats.send_failures, 2u);
}

TEST_F(DispatcherStateTest, MalformedAndUnexpectedAreCountedNotFatal) {
  state_.handle_malformed("r-x", Status::corruption("garbage"));
  hello("w1", 0);
  from("w1", [](Body::Builder b) { b.initRolloutRequest().setWorkId(4); });  // wrong direction
  from(
      "w1", [](Body::Builder b) { b.initHello(); }, "r-anon");  // no worker id
  auto stats = state_.stats(now_);
  EXPECT_EQ(stats.malformed_frames, 1u);
  EXPECT_EQ(stats.unexpected_messages, 2u);
  EXPECT_EQ(stats.workers, 1u);
}

// An Error about no work item is the worker's own (a rollout worker that refused a weights push or
// could not load it, issue 51 item 1): each is logged with its text, also past the powers of two
// that sample the items' Errors, and counted with them.
TEST_F(DispatcherStateTest, EveryErrorOfAWorkerItselfIsLoggedAndCounted) {
  hello("w1", 0);
  for (std::uint64_t work_id = 1; work_id <= 4; ++work_id) {
    from("w1", [&](Body::Builder b) {
      b.initError().setWorkId(work_id);
      b.getError().setMessage("item failed");
    });
  }
  testing::internal::CaptureStderr();
  from("w1", [](Body::Builder b) {
    b.initError().setWorkId(0);
    b.getError().setMessage("weights v7 from /ckpt/policy-v7 not loaded");
  });
  const std::string log = testing::internal::GetCapturedStderr();
  EXPECT_NE(log.find("weights v7 from /ckpt/policy-v7 not loaded"), std::string::npos) << log;
  EXPECT_NE(log.find("worker=w1"), std::string::npos) << log;
  EXPECT_EQ(state_.stats(now_).errors_received, 5u);
}

TEST_F(DispatcherStateTest, CreditsAreCapped) {
  hello("w1", 0);
  credit("w1", 0xffffffffu);
  credit("w1", 0xffffffffu);
  EXPECT_EQ(state_.stats(now_).credits, DispatcherOptions().max_credits_per_worker);
}

TEST(ShouldLogOccurrence, PowersOfTwo) {
  std::vector<std::uint64_t> logged;
  for (std::uint64_t i = 0; i <= 20; ++i) {
    if (should_log_occurrence(i)) logged.push_back(i);
  }
  EXPECT_EQ(logged, (std::vector<std::uint64_t>{1, 2, 4, 8, 16}));
}

}  // namespace
}  // namespace dice::transport
