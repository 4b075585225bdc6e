// WorkerConnection against a fake learner: a bare ROUTER socket in the test that reads and writes
// envelopes by hand, over a real loopback socket.
#include "net/transport/worker_connection.h"

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>
#include <zmq.hpp>

#include "net/transport/zmq_frames.h"

namespace dice::transport {
namespace {

using std::chrono::milliseconds;
using Body = schema::Envelope::Body;

constexpr int kIntervalMs = 50;

// The learner's side, played by hand.
class FakeLearner {
 public:
  FakeLearner() : socket_(context_, zmq::socket_type::router) {
    socket_.set(zmq::sockopt::linger, 0);
    socket_.bind("tcp://127.0.0.1:*");
    endpoint_ = socket_.get(zmq::sockopt::last_endpoint);
  }
  const std::string& endpoint() const { return endpoint_; }

  // The next envelope whose body is `which`, skipping others (heartbeats); fails at the deadline.
  wire::Decoded<schema::Envelope> expect(Body::Which which, int deadline_ms = 5000) {
    const auto end = std::chrono::steady_clock::now() + milliseconds(deadline_ms);
    while (std::chrono::steady_clock::now() < end) {
      zmq::pollitem_t item{socket_.handle(), 0, ZMQ_POLLIN, 0};
      zmq::poll(&item, 1, milliseconds(10));
      std::vector<zmq::message_t> frames;
      while (receive_frames(socket_, &frames)) {
        if (frames.size() != 2) continue;
        routing_id_ = frame_string(frames[0]);
        auto decoded = wire::decode_envelope(frames[1].to_string_view());
        if (!decoded.ok()) continue;
        if (decoded->root().getBody().which() == which) return std::move(decoded).value();
      }
    }
    ADD_FAILURE() << "no " << wire::body_name(which) << " within " << deadline_ms << " ms";
    capnp::MallocMessageBuilder empty;
    wire::init_envelope(empty, "", "");
    return std::move(wire::decode_envelope(wire::encode(empty))).value();
  }
  // True if nothing of kind `which` arrives within `ms`.
  bool silent_about(Body::Which which, int ms) {
    const auto end = std::chrono::steady_clock::now() + milliseconds(ms);
    while (std::chrono::steady_clock::now() < end) {
      std::vector<zmq::message_t> frames;
      zmq::pollitem_t item{socket_.handle(), 0, ZMQ_POLLIN, 0};
      zmq::poll(&item, 1, milliseconds(5));
      while (receive_frames(socket_, &frames)) {
        auto decoded = wire::decode_envelope(frames.back().to_string_view());
        if (decoded.ok() && decoded->root().getBody().which() == which) return false;
      }
    }
    return true;
  }
  template <typename Fill>
  void send(Fill fill) {
    capnp::MallocMessageBuilder message;
    fill(wire::init_envelope(message, "learner", "run").getBody());
    ASSERT_EQ(send_frames(socket_, routing_id_, wire::encode(message)), SendOutcome::kSent);
  }
  void send_raw(const std::string& bytes) {
    ASSERT_EQ(send_frames(socket_, routing_id_, bytes), SendOutcome::kSent);
  }

 private:
  zmq::context_t context_{1};
  zmq::socket_t socket_;
  std::string endpoint_;
  std::string routing_id_;
};

std::unique_ptr<WorkerConnection> connect(const FakeLearner& learner, std::uint32_t capacity,
                                          int misses_before_dead = 4) {
  WorkerOptions options;
  options.learner_endpoint = learner.endpoint();
  options.worker_id = "node/reward/0";
  options.role = schema::Role::REWARD;
  options.capacity = capacity;
  options.gpu_slots = {"0/2"};
  options.heartbeat_interval_ms = kIntervalMs;
  options.misses_before_dead = misses_before_dead;
  auto connection = WorkerConnection::start(options);
  EXPECT_TRUE(connection.ok()) << connection.status().to_string();
  return connection.ok() ? std::move(connection).value() : nullptr;
}

TEST(WorkerConnection, StartsWithHelloThenCreditForItsCapacity) {
  FakeLearner learner;
  auto worker = connect(learner, 3);
  ASSERT_NE(worker, nullptr);
  auto hello = learner.expect(Body::HELLO);
  auto h = hello.root().getBody().getHello();
  EXPECT_EQ(std::string(h.getWorkerId().cStr()), "node/reward/0");
  EXPECT_EQ(h.getRole(), schema::Role::REWARD);
  EXPECT_EQ(h.getCapacity(), 3u);
  EXPECT_EQ(h.getPid(), static_cast<std::uint32_t>(getpid()));
  ASSERT_EQ(h.getGpuSlots().size(), 1u);
  EXPECT_FALSE(std::string(h.getNode().cStr()).empty());
  auto credit = learner.expect(Body::CREDIT);
  EXPECT_EQ(credit.root().getBody().getCredit().getCredits(), 3u);
  learner.expect(Body::HEARTBEAT);  // and it heartbeats
}

TEST(WorkerConnection, WorkFinishAndDuplicates) {
  FakeLearner learner;
  auto worker = connect(learner, 2);
  ASSERT_NE(worker, nullptr);
  learner.expect(Body::CREDIT);
  auto send_work = [&] {
    learner.send([](Body::Builder b) { b.initEvalRequest().setWorkId(42); });
  };
  send_work();
  auto work = worker->receive(milliseconds(5000));
  ASSERT_TRUE(work.ok()) << work.status().to_string();
  EXPECT_EQ(work->root().getBody().getEvalRequest().getWorkId(), 42u);

  // The same item again (a learner re-dispatch after a re-Hello): dropped, its credit returned.
  send_work();
  auto credit = learner.expect(Body::CREDIT);
  EXPECT_EQ(credit.root().getBody().getCredit().getCredits(), 1u);
  EXPECT_EQ(worker->stats().duplicate_work, 1u);
  EXPECT_EQ(worker->receive(milliseconds(100)).status().code(), StatusCode::kTimeout);

  capnp::MallocMessageBuilder message;
  worker->init_envelope(message).getBody().initVerdict().setWorkId(42);
  ASSERT_TRUE(worker->send_result(wire::encode(message), milliseconds(1000)).ok());
  ASSERT_TRUE(worker->finish(42).ok());
  auto verdict = learner.expect(Body::VERDICT);
  EXPECT_EQ(std::string(verdict.root().getSenderId().cStr()), "node/reward/0");
  auto ack = learner.expect(Body::ACK);
  EXPECT_EQ(ack.root().getBody().getAck().getWorkId(), 42u);
  EXPECT_EQ(ack.root().getBody().getAck().getCredits(), 1u);  // the freed slot, folded in
  EXPECT_EQ(worker->finish(42).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(worker->stats().finished, 1u);
}

TEST(WorkerConnection, FinishWithTheLastResultSendsOneMessageCarryingTheAck) {
  FakeLearner learner;
  auto worker = connect(learner, 2);
  ASSERT_NE(worker, nullptr);
  learner.expect(Body::CREDIT);
  // A small result, and one past the zero-copy threshold (sent as a large frame).
  for (const std::size_t excerpt_bytes : {std::size_t{16}, kZeroCopyBytes * 2}) {
    const std::uint64_t work_id = 40 + excerpt_bytes;
    learner.send([&](Body::Builder b) { b.initEvalRequest().setWorkId(work_id); });
    ASSERT_TRUE(worker->receive(milliseconds(5000)).ok());
    capnp::MallocMessageBuilder message;
    auto verdict = worker->init_envelope(message).getBody().initVerdict();
    verdict.setWorkId(work_id);
    verdict.setLogExcerpt(std::string(excerpt_bytes, 'v'));
    ASSERT_TRUE(worker->finish(work_id, message, milliseconds(1000)).ok());
    auto got = learner.expect(Body::VERDICT);
    EXPECT_EQ(got.root().getBody().getVerdict().getWorkId(), work_id);
    EXPECT_EQ(got.root().getBody().getVerdict().getLogExcerpt().size(), excerpt_bytes);
    ASSERT_TRUE(got.root().hasAck());
    EXPECT_EQ(got.root().getAck().getWorkId(), work_id);
    EXPECT_EQ(got.root().getAck().getCredits(), 1u);  // the freed slot
    // Finished once: a second finish of either kind is refused and sends nothing.
    EXPECT_EQ(worker->finish(work_id, message, milliseconds(100)).code(),
              StatusCode::kInvalidArgument);
    EXPECT_EQ(worker->finish(work_id).code(), StatusCode::kInvalidArgument);
  }
  EXPECT_TRUE(learner.silent_about(Body::ACK, 200));  // no separate Ack
  EXPECT_TRUE(learner.silent_about(Body::VERDICT, 50));
  EXPECT_EQ(worker->stats().finished, 2u);
  EXPECT_EQ(worker->stats().held, 0u);
}

TEST(WorkerConnection, SaysHelloAgainWhenTheLearnerDoesNotKnowIt) {
  FakeLearner learner;
  auto worker = connect(learner, 2, /*misses_before_dead=*/100);  // silence plays no part here
  ASSERT_NE(worker, nullptr);
  learner.expect(Body::HELLO);
  // A heartbeat addressed to this worker: all is well, no new Hello.
  learner.send([](Body::Builder b) { b.initHeartbeat().setWorkerId("node/reward/0"); });
  EXPECT_TRUE(learner.silent_about(Body::HELLO, 2 * kIntervalMs));
  // Addressed to nobody: this learner has forgotten (restarted, or declared it dead).
  learner.send([](Body::Builder b) { b.initHeartbeat().setWorkerId(""); });
  learner.expect(Body::HELLO, 2000);
  EXPECT_EQ(learner.expect(Body::CREDIT).root().getBody().getCredit().getCredits(), 2u);
  EXPECT_EQ(worker->stats().hellos_sent, 2u);
}

TEST(WorkerConnection, SaysHelloAgainWhenTheLearnerFallsSilent) {
  FakeLearner learner;
  auto worker = connect(learner, 1);
  ASSERT_NE(worker, nullptr);
  learner.expect(Body::HELLO);
  // Nothing from the learner for misses_before_dead (4) intervals.
  const auto start = std::chrono::steady_clock::now();
  learner.expect(Body::HELLO, 5000);
  EXPECT_GE(std::chrono::steady_clock::now() - start, milliseconds(3 * kIntervalMs));
}

TEST(WorkerConnection, MalformedFramesAreCountedAndDropped) {
  FakeLearner learner;
  auto worker = connect(learner, 1);
  ASSERT_NE(worker, nullptr);
  learner.expect(Body::HELLO);
  learner.send_raw("definitely not an envelope");
  learner.send([](Body::Builder b) { b.initCredit(); });  // a learner never sends Credit
  learner.send([](Body::Builder b) { b.initShutdown().setReason("done"); });
  auto shutdown = worker->receive(milliseconds(5000));
  ASSERT_TRUE(shutdown.ok()) << shutdown.status().to_string();
  EXPECT_EQ(shutdown->root().getBody().which(), Body::SHUTDOWN);
  auto stats = worker->stats();
  EXPECT_EQ(stats.malformed_frames, 1u);
  EXPECT_EQ(stats.unexpected_messages, 1u);
}

// A Cancel reaches receive() only for an item held, after the item; one for an item finished,
// never received or id 0 is counted and dropped, and a garbled one is a malformed frame: the
// connection goes on.
TEST(WorkerConnection, CancelsOfHeldItemsArePassedOnAndOthersDropped) {
  FakeLearner learner;
  auto worker = connect(learner, 2);
  ASSERT_NE(worker, nullptr);
  learner.expect(Body::CREDIT);
  learner.send([](Body::Builder b) { b.initEvalRequest().setWorkId(7); });
  learner.send([](Body::Builder b) { b.initCancel().setWorkId(7); });
  learner.send([](Body::Builder b) { b.initCancel().setWorkId(99); });  // never received
  learner.send([](Body::Builder b) { b.initCancel().setWorkId(0); });
  {
    capnp::MallocMessageBuilder message;
    wire::init_envelope(message, "learner", "run").getBody().initCancel().setWorkId(7);
    const std::string bytes = wire::encode(message);
    learner.send_raw(bytes.substr(0, bytes.size() / 2));  // cut short
  }
  auto work = worker->receive(milliseconds(5000));
  ASSERT_TRUE(work.ok()) << work.status().to_string();
  EXPECT_EQ(work->root().getBody().which(), Body::EVAL_REQUEST);
  auto cancel = worker->receive(milliseconds(5000));
  ASSERT_TRUE(cancel.ok()) << cancel.status().to_string();
  ASSERT_EQ(cancel->root().getBody().which(), Body::CANCEL);
  EXPECT_EQ(cancel->root().getBody().getCancel().getWorkId(), 7u);
  ASSERT_TRUE(worker->finish(7).ok());  // ended with an Ack alone
  EXPECT_EQ(learner.expect(Body::ACK).root().getBody().getAck().getWorkId(), 7u);

  learner.send([](Body::Builder b) { b.initCancel().setWorkId(7); });  // late: finished
  learner.send([](Body::Builder b) { b.initShutdown().setReason("done"); });
  auto shutdown = worker->receive(milliseconds(5000));
  ASSERT_TRUE(shutdown.ok()) << shutdown.status().to_string();
  EXPECT_EQ(shutdown->root().getBody().which(), Body::SHUTDOWN);
  auto stats = worker->stats();
  EXPECT_EQ(stats.cancels_received, 1u);
  EXPECT_EQ(stats.cancels_ignored, 3u);
  EXPECT_EQ(stats.malformed_frames, 1u);
  EXPECT_EQ(stats.held, 0u);
}

TEST(WorkerConnection, BadOptionsAreRejected) {
  WorkerOptions options;
  EXPECT_EQ(WorkerConnection::start(options).status().code(), StatusCode::kInvalidArgument);
  options.learner_endpoint = "tcp://127.0.0.1:1";
  EXPECT_EQ(WorkerConnection::start(options).status().code(), StatusCode::kInvalidArgument);
  options.worker_id = "w";
  options.capacity = 0;
  EXPECT_EQ(WorkerConnection::start(options).status().code(), StatusCode::kInvalidArgument);
  options.capacity = 1;
  options.learner_endpoint = "not-an-endpoint";
  auto bad = WorkerConnection::start(options);
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("not-an-endpoint"), std::string::npos);
}

}  // namespace
}  // namespace dice::transport
