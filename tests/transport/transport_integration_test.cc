// The transport end to end: a WorkDispatcher in this process, worker test doubles as real child
// processes, real TCP sockets on 127.0.0.1 with ephemeral ports. Every wait polls with a deadline.
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>
#include <zmq.hpp>

#include "net/transport/work_dispatcher.h"
#include "net/transport/worker_connection.h"
#include "tests/support/child_process.h"
#include "tests/support/eventually.h"

namespace dice::transport {
namespace {

using std::chrono::milliseconds;
using Body = schema::Envelope::Body;

constexpr int kHeartbeatMs = 100;
constexpr auto kDeadline = std::chrono::seconds(20);

using testing_util::ChildProcess;

std::unique_ptr<ChildProcess> start_worker(const char* binary, const std::string& endpoint,
                                           const std::string& id, int capacity = 1,
                                           int sleep_ms = 0) {
  return std::make_unique<ChildProcess>(
      binary,
      std::vector<std::string>{"--endpoint", endpoint, "--id", id, "--capacity",
                               std::to_string(capacity), "--sleep-ms", std::to_string(sleep_ms),
                               "--heartbeat-ms", std::to_string(kHeartbeatMs)});
}

std::unique_ptr<WorkDispatcher> start_dispatcher(const std::string& endpoint = "tcp://127.0.0.1:*",
                                                 std::size_t queue_capacity = 1024) {
  DispatcherOptions options;
  options.bind_endpoint = endpoint;
  options.heartbeat_interval_ms = kHeartbeatMs;
  options.misses_before_dead = 5;
  options.queue_capacity = queue_capacity;
  auto dispatcher = WorkDispatcher::start(options);
  EXPECT_TRUE(dispatcher.ok()) << dispatcher.status().to_string();
  return dispatcher.ok() ? std::move(dispatcher).value() : nullptr;
}

// Polls `condition` until it holds or the deadline passes.
bool eventually(const std::function<bool()>& condition) {
  return testing_util::eventually(condition, kDeadline);
}

std::string worker_list(const WorkDispatcher& dispatcher) {
  std::string out;
  for (const WorkerSnapshot& w : dispatcher.stats().worker_list) {
    out += w.worker_id + ":credits=" + std::to_string(w.credits) +
           ",in_flight=" + std::to_string(w.in_flight) +
           ",completed=" + std::to_string(w.completed) + " ";
  }
  return out;
}

WorkItem eval_item(std::uint64_t work_id) {
  capnp::MallocMessageBuilder message;
  auto request = wire::init_envelope(message, "learner", "run").getBody().initEvalRequest();
  request.setWorkId(work_id);
  request.getTask().setId("task-" + std::to_string(work_id));
  return WorkItem{work_id, wire::encode(message), std::nullopt};
}

// Collects verdicts until `count` distinct work ids came back; returns work id -> worker id.
std::map<std::uint64_t, std::string> collect(WorkDispatcher& dispatcher, std::size_t count) {
  std::map<std::uint64_t, std::string> by_work;
  const auto end = std::chrono::steady_clock::now() + kDeadline;
  while (by_work.size() < count && std::chrono::steady_clock::now() < end) {
    auto result = dispatcher.next_result(milliseconds(100));
    if (!result.ok()) continue;
    auto body = result->envelope.root().getBody();
    EXPECT_EQ(body.which(), Body::VERDICT);
    EXPECT_EQ(body.getVerdict().getWorkId(), result->work_id);
    EXPECT_EQ(std::string(body.getVerdict().getTaskId().cStr()),
              "task-" + std::to_string(result->work_id));
    EXPECT_TRUE(by_work.emplace(result->work_id, result->worker_id).second)
        << "work id " << result->work_id << " delivered twice";
  }
  return by_work;
}

TEST(TransportIntegration, BindsAnEphemeralPort) {
  auto dispatcher = start_dispatcher();
  ASSERT_NE(dispatcher, nullptr);
  EXPECT_EQ(dispatcher->endpoint().rfind("tcp://127.0.0.1:", 0), 0u) << dispatcher->endpoint();
  EXPECT_EQ(dispatcher->endpoint().find('*'), std::string::npos);
  // The same port again is refused with a clear error.
  DispatcherOptions options;
  options.bind_endpoint = dispatcher->endpoint();
  auto second = WorkDispatcher::start(options);
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), StatusCode::kIOError);
  EXPECT_NE(second.status().message().find(dispatcher->endpoint()), std::string::npos);
}

TEST(TransportIntegration, WorkSpreadsAcrossWorkers) {
  auto dispatcher = start_dispatcher();
  ASSERT_NE(dispatcher, nullptr);
  std::vector<std::unique_ptr<ChildProcess>> workers;
  for (int i = 0; i < 3; ++i) {
    workers.push_back(start_worker(DICE_SLEEP_WORKER, dispatcher->endpoint(),
                                   "w" + std::to_string(i), /*capacity=*/2, /*sleep_ms=*/20));
  }
  ASSERT_TRUE(eventually([&] { return dispatcher->stats().credits == 6; }));
  for (std::uint64_t id = 1; id <= 30; ++id) {
    ASSERT_TRUE(dispatcher->submit(eval_item(id), milliseconds(1000)).ok());
  }
  auto results = collect(*dispatcher, 30);
  ASSERT_EQ(results.size(), 30u);
  std::map<std::string, int> per_worker;
  for (auto& [work, worker] : results) ++per_worker[worker];
  EXPECT_EQ(per_worker.size(), 3u) << "every worker took some of the work";
  EXPECT_TRUE(eventually([&] { return dispatcher->stats().completed == 30; }));
  auto stats = dispatcher->stats();
  EXPECT_EQ(stats.in_flight, 0u);
  EXPECT_EQ(stats.duplicate_results, 0u);
}

TEST(TransportIntegration, KilledWorkerLosesNothing) {
  auto dispatcher = start_dispatcher();
  ASSERT_NE(dispatcher, nullptr);
  auto doomed = start_worker(DICE_SLEEP_WORKER, dispatcher->endpoint(), "doomed", 2, 200);
  auto survivor = start_worker(DICE_SLEEP_WORKER, dispatcher->endpoint(), "survivor", 2, 20);
  ASSERT_TRUE(eventually([&] { return dispatcher->stats().workers == 2; }));
  for (std::uint64_t id = 1; id <= 12; ++id) {
    ASSERT_TRUE(dispatcher->submit(eval_item(id), milliseconds(1000)).ok());
  }
  // SIGKILL while "doomed" holds work (it sleeps 200 ms per item).
  ASSERT_TRUE(eventually([&] { return dispatcher->stats().in_flight >= 3; }));
  doomed->kill();
  auto results = collect(*dispatcher, 12);
  EXPECT_EQ(results.size(), 12u);
  EXPECT_TRUE(eventually([&] { return dispatcher->stats().completed == 12; }));
  auto stats = dispatcher->stats();
  EXPECT_EQ(stats.workers_dead, 1u);
  EXPECT_GE(stats.requeued, 1u);
  EXPECT_EQ(stats.workers, 1u);
  // Nothing more arrives: every item was delivered exactly once.
  EXPECT_EQ(dispatcher->next_result(milliseconds(200)).status().code(), StatusCode::kTimeout);
}

TEST(TransportIntegration, HungWorkerIsDeclaredDeadByHeartbeatSilenceAndRejoins) {
  auto dispatcher = start_dispatcher();
  ASSERT_NE(dispatcher, nullptr);
  auto hung = start_worker(DICE_SLEEP_WORKER, dispatcher->endpoint(), "hung", 1, 300);
  ASSERT_TRUE(eventually([&] { return dispatcher->stats().workers == 1; }));
  ASSERT_TRUE(dispatcher->submit(eval_item(1), milliseconds(1000)).ok());
  ASSERT_TRUE(eventually([&] { return dispatcher->stats().in_flight == 1; }));
  // SIGSTOP keeps the TCP connection open: only the missing heartbeats can tell.
  hung->signal(SIGSTOP);
  auto helper = start_worker(DICE_ECHO_WORKER, dispatcher->endpoint(), "helper", 1);
  auto results = collect(*dispatcher, 1);
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results.begin()->second, "helper");
  EXPECT_EQ(dispatcher->stats().workers_dead, 1u);

  ASSERT_TRUE(eventually([&] { return dispatcher->stats().completed == 1; }));
  // Woken up, the worker finishes its stale item (dropped as a duplicate) and says Hello again.
  hung->signal(SIGCONT);
  EXPECT_TRUE(eventually([&] {
    auto stats = dispatcher->stats();
    return stats.workers == 2 && stats.duplicate_results >= 1;
  })) << "workers "
      << dispatcher->stats().workers << " duplicates " << dispatcher->stats().duplicate_results
      << " unknown " << dispatcher->stats().unknown_results;
  EXPECT_EQ(dispatcher->next_result(milliseconds(200)).status().code(), StatusCode::kTimeout);
}

TEST(TransportIntegration, WorkerThatCrashesOnWorkIsReplaced) {
  auto dispatcher = start_dispatcher();
  ASSERT_NE(dispatcher, nullptr);
  auto crasher = start_worker(DICE_CRASH_WORKER, dispatcher->endpoint(), "crasher", 4);
  ASSERT_TRUE(eventually([&] { return dispatcher->stats().workers == 1; }));
  for (std::uint64_t id = 1; id <= 4; ++id) {
    ASSERT_TRUE(dispatcher->submit(eval_item(id), milliseconds(1000)).ok());
  }
  EXPECT_NE(crasher->wait_exit(kDeadline), -1);  // it died on its first item
  auto echo = start_worker(DICE_ECHO_WORKER, dispatcher->endpoint(), "echo", 2);
  auto results = collect(*dispatcher, 4);
  EXPECT_EQ(results.size(), 4u);
  for (auto& [work, worker] : results) EXPECT_EQ(worker, "echo");
  EXPECT_EQ(dispatcher->stats().workers_dead, 1u);
}

TEST(TransportIntegration, WorkersRejoinARestartedLearner) {
  auto first = start_dispatcher();
  ASSERT_NE(first, nullptr);
  const std::string endpoint = first->endpoint();
  auto a = start_worker(DICE_ECHO_WORKER, endpoint, "a", 2);
  auto b = start_worker(DICE_ECHO_WORKER, endpoint, "b", 2);
  ASSERT_TRUE(eventually([&] { return first->stats().workers == 2; }));
  for (std::uint64_t id = 1; id <= 4; ++id)
    ASSERT_TRUE(first->submit(eval_item(id), milliseconds(1000)).ok());
  EXPECT_EQ(collect(*first, 4).size(), 4u);

  first.reset();                             // the learner goes away...
  auto second = start_dispatcher(endpoint);  // ...and comes back on the same port
  ASSERT_NE(second, nullptr);
  // Registered and credited again (Hello, then Credit for 2 free slots each).
  ASSERT_TRUE(
      eventually([&] { return second->stats().workers == 2 && second->stats().credits == 4; }));
  const std::string before = worker_list(*second);
  for (std::uint64_t id = 101; id <= 108; ++id) {
    ASSERT_TRUE(second->submit(eval_item(id), milliseconds(1000)).ok());
  }
  auto results = collect(*second, 8);
  EXPECT_EQ(results.size(), 8u);
  std::set<std::string> workers;
  for (auto& [work, worker] : results) workers.insert(worker);
  EXPECT_EQ(workers, (std::set<std::string>{"a", "b"}))
      << "dispatched " << second->stats().dispatched << " requeued " << second->stats().requeued
      << " credits " << second->stats().credits << " unknown " << second->stats().unknown_results
      << " " << worker_list(*second) << " before: " << before;
}

TEST(TransportIntegration, MalformedFramesAreDroppedAndCounted) {
  auto dispatcher = start_dispatcher();
  ASSERT_NE(dispatcher, nullptr);
  zmq::context_t context(1);
  zmq::socket_t rogue(context, zmq::socket_type::dealer);
  rogue.set(zmq::sockopt::linger, 0);
  rogue.connect(dispatcher->endpoint());
  rogue.send(zmq::str_buffer("not a capnp message"), zmq::send_flags::none);  // garbage
  rogue.send(zmq::str_buffer("a"), zmq::send_flags::sndmore);                 // wrong frame count
  rogue.send(zmq::str_buffer("b"), zmq::send_flags::none);
  std::string truncated = eval_item(1).payload;
  truncated.resize(truncated.size() / 2);
  rogue.send(zmq::buffer(truncated), zmq::send_flags::none);
  ASSERT_TRUE(eventually([&] { return dispatcher->stats().malformed_frames == 3; }));

  // The dispatcher still works.
  auto echo = start_worker(DICE_ECHO_WORKER, dispatcher->endpoint(), "echo", 1);
  ASSERT_TRUE(dispatcher->submit(eval_item(5), milliseconds(1000)).ok());
  EXPECT_EQ(collect(*dispatcher, 1).size(), 1u);
  EXPECT_EQ(dispatcher->stats().malformed_frames, 3u);
}

TEST(TransportIntegration, RolloutRequestGetsEverySampleOnce) {
  auto dispatcher = start_dispatcher();
  ASSERT_NE(dispatcher, nullptr);
  auto echo = start_worker(DICE_ECHO_WORKER, dispatcher->endpoint(), "echo", 1);
  capnp::MallocMessageBuilder message;
  auto request = wire::init_envelope(message, "learner", "run").getBody().initRolloutRequest();
  request.setWorkId(77);
  request.setNumSamples(16);
  request.getTask().setPrompt("write a kernel");
  ASSERT_TRUE(
      dispatcher->submit(WorkItem{77, wire::encode(message), std::nullopt}, milliseconds(1000))
          .ok());
  std::set<std::uint32_t> samples;
  const auto end = std::chrono::steady_clock::now() + kDeadline;
  while (samples.size() < 16 && std::chrono::steady_clock::now() < end) {
    auto result = dispatcher->next_result(milliseconds(100));
    if (!result.ok()) continue;
    auto candidate = result->envelope.root().getBody().getCandidate();
    EXPECT_EQ(std::string(candidate.getText().cStr()), "write a kernel");
    EXPECT_TRUE(samples.insert(candidate.getSampleIndex()).second);
  }
  EXPECT_EQ(samples.size(), 16u);
  EXPECT_TRUE(eventually([&] { return dispatcher->stats().completed == 1; }));
}

// Work of a group that expired: withdrawn while queued, it frees its queue place and no worker
// ever gets it.
TEST(TransportIntegration, CancelledQueuedWorkNeverReachesAWorker) {
  auto dispatcher = start_dispatcher("tcp://127.0.0.1:*", /*queue_capacity=*/2);
  ASSERT_NE(dispatcher, nullptr);
  ASSERT_TRUE(dispatcher->submit(eval_item(1), milliseconds(0)).ok());
  ASSERT_TRUE(dispatcher->submit(eval_item(2), milliseconds(0)).ok());
  EXPECT_EQ(dispatcher->cancel({2, 99}), 1u);
  ASSERT_TRUE(dispatcher->submit(eval_item(3), milliseconds(0)).ok());  // 2's place
  EXPECT_EQ(dispatcher->cancel({3}), 1u);

  auto echo = start_worker(DICE_ECHO_WORKER, dispatcher->endpoint(), "echo", 2);
  auto results = collect(*dispatcher, 1);
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results.begin()->first, 1u);
  EXPECT_EQ(dispatcher->next_result(milliseconds(300)).status().code(), StatusCode::kTimeout);
  auto stats = dispatcher->stats();
  EXPECT_EQ(stats.cancelled, 2u);
  EXPECT_EQ(stats.dispatched, 1u);
  EXPECT_EQ(stats.pending, 0u);
}

TEST(TransportIntegration, FullQueueRejectsAndCloseWakesWaiters) {
  auto dispatcher = start_dispatcher("tcp://127.0.0.1:*", /*queue_capacity=*/2);
  ASSERT_NE(dispatcher, nullptr);
  ASSERT_TRUE(dispatcher->submit(eval_item(1), milliseconds(0)).ok());
  ASSERT_TRUE(dispatcher->submit(eval_item(2), milliseconds(0)).ok());
  Status full = dispatcher->submit(eval_item(3), milliseconds(50));
  EXPECT_EQ(full.code(), StatusCode::kUnavailable) << full.to_string();

  Status blocked_submit;
  Status blocked_result;
  std::thread submitter([&] { blocked_submit = dispatcher->submit(eval_item(4), kDeadline); });
  std::thread consumer([&] { blocked_result = dispatcher->next_result(kDeadline).status(); });
  std::this_thread::sleep_for(milliseconds(50));  // let both block (not a readiness wait)
  const auto start = std::chrono::steady_clock::now();
  dispatcher->close();
  submitter.join();
  consumer.join();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2));
  EXPECT_EQ(blocked_submit.code(), StatusCode::kAborted);
  EXPECT_EQ(blocked_result.code(), StatusCode::kAborted);
}

TEST(TransportIntegration, ShutdownBroadcastStopsWorkers) {
  auto dispatcher = start_dispatcher();
  ASSERT_NE(dispatcher, nullptr);
  auto a = start_worker(DICE_ECHO_WORKER, dispatcher->endpoint(), "a", 1);
  auto b = start_worker(DICE_ECHO_WORKER, dispatcher->endpoint(), "b", 1);
  ASSERT_TRUE(eventually([&] { return dispatcher->stats().workers == 2; }));
  capnp::MallocMessageBuilder message;
  wire::init_envelope(message, "learner", "run").getBody().initShutdown().setReason("test over");
  ASSERT_TRUE(dispatcher->broadcast(wire::encode(message)).ok());
  EXPECT_EQ(a->wait_exit(kDeadline), 0);
  EXPECT_EQ(b->wait_exit(kDeadline), 0);
}

TEST(TransportIntegration, WorkerRefusesWorkBeyondItsInboxWithAnError) {
  auto dispatcher = start_dispatcher();
  ASSERT_NE(dispatcher, nullptr);
  WorkerOptions options;
  options.learner_endpoint = dispatcher->endpoint();
  options.worker_id = "in-process";
  options.capacity = 4;        // grants 4 credits...
  options.inbox_capacity = 1;  // ...but queues only 1 untaken message
  options.heartbeat_interval_ms = kHeartbeatMs;
  auto worker = WorkerConnection::start(options);
  ASSERT_TRUE(worker.ok()) << worker.status().to_string();
  ASSERT_TRUE(eventually([&] { return dispatcher->stats().credits == 4; }));
  ASSERT_TRUE(dispatcher->submit(eval_item(1), milliseconds(1000)).ok());
  ASSERT_TRUE(dispatcher->submit(eval_item(2), milliseconds(1000)).ok());

  // The refused item comes back as an Error result and is complete; the other one waits.
  auto result = dispatcher->next_result(kDeadline);
  ASSERT_TRUE(result.ok()) << result.status().to_string();
  ASSERT_EQ(result->envelope.root().getBody().which(), Body::ERROR);
  EXPECT_EQ(result->work_id, 2u);
  EXPECT_NE(std::string(result->envelope.root().getBody().getError().getMessage().cStr())
                .find("inbox full"),
            std::string::npos);
  EXPECT_EQ((*worker)->stats().refused_work, 1u);

  auto work = (*worker)->receive(kDeadline);
  ASSERT_TRUE(work.ok()) << work.status().to_string();
  EXPECT_EQ(work->root().getBody().getEvalRequest().getWorkId(), 1u);
  Status unknown = (*worker)->finish(99);
  EXPECT_EQ(unknown.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(unknown.message().find("99"), std::string::npos);
  ASSERT_TRUE((*worker)->finish(1).ok());
  // Every credit came back: the refusal's and the finished item's.
  EXPECT_TRUE(eventually([&] {
    auto stats = dispatcher->stats();
    return stats.completed == 2 && stats.credits == 4;
  })) << "completed "
      << dispatcher->stats().completed << " " << worker_list(*dispatcher) << " worker: hellos "
      << (*worker)->stats().hellos_sent << " duplicates " << (*worker)->stats().duplicate_work
      << " dispatched " << dispatcher->stats().dispatched;

  (*worker)->close();
  EXPECT_EQ((*worker)->receive(milliseconds(10)).status().code(), StatusCode::kAborted);
}

}  // namespace
}  // namespace dice::transport
