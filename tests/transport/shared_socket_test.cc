// WorkDispatcher and WorkerConnection in one process over real loopback, for the way their sockets
// are shared (poller_role.h): consumers waiting in next_result() / receive() read the socket
// themselves, several at once take turns, and the background thread reads it (credits, acks,
// heartbeats) when no consumer waits or while one waits for a long time.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "net/transport/work_dispatcher.h"
#include "net/transport/worker_connection.h"
#include "tests/support/eventually.h"

namespace dice::transport {
namespace {

using std::chrono::milliseconds;
using Body = schema::Envelope::Body;

constexpr int kIntervalMs = 50;

struct Pair {
  std::unique_ptr<WorkDispatcher> dispatcher;
  std::unique_ptr<WorkerConnection> worker;
};

Pair start_pair(std::uint32_t capacity, std::size_t queue_capacity = 1024) {
  DispatcherOptions dispatcher_options;
  dispatcher_options.heartbeat_interval_ms = kIntervalMs;
  dispatcher_options.misses_before_dead = 3;
  dispatcher_options.queue_capacity = queue_capacity;
  auto dispatcher = WorkDispatcher::start(dispatcher_options);
  EXPECT_TRUE(dispatcher.ok()) << dispatcher.status().to_string();
  if (!dispatcher.ok()) return {};
  WorkerOptions worker_options;
  worker_options.learner_endpoint = (*dispatcher)->endpoint();
  worker_options.worker_id = "node/reward/0";
  worker_options.role = schema::Role::REWARD;
  worker_options.capacity = capacity;
  worker_options.heartbeat_interval_ms = kIntervalMs;
  worker_options.misses_before_dead = 3;
  auto worker = WorkerConnection::start(worker_options);
  EXPECT_TRUE(worker.ok()) << worker.status().to_string();
  if (!worker.ok()) return {};
  return Pair{std::move(dispatcher).value(), std::move(worker).value()};
}

WorkItem item(std::uint64_t work_id) {
  capnp::MallocMessageBuilder message;
  auto request = wire::init_envelope(message, "learner", "run").getBody().initEvalRequest();
  request.setWorkId(work_id);
  return WorkItem{work_id, wire::encode(message), std::nullopt};
}

// Answers each EvalRequest with a Verdict, then finishes it.
void echo(WorkerConnection& worker, const std::atomic<bool>& stop) {
  while (!stop) {
    auto work = worker.receive(milliseconds(20));
    if (!work.ok() || work->root().getBody().which() != Body::EVAL_REQUEST) continue;
    const std::uint64_t work_id = work->root().getBody().getEvalRequest().getWorkId();
    capnp::MallocMessageBuilder message;
    worker.init_envelope(message).getBody().initVerdict().setWorkId(work_id);
    ASSERT_TRUE(worker.send_result(wire::encode(message), milliseconds(5000)).ok());
    ASSERT_TRUE(worker.finish(work_id).ok());
  }
}

using testing_util::eventually;

TEST(SharedSocket, SeveralThreadsWaitOnEachSideAndEveryResultComesOnce) {
  constexpr int kItems = 300;
  Pair pair = start_pair(/*capacity=*/8);
  ASSERT_NE(pair.worker, nullptr);
  std::atomic<bool> stop{false};
  std::vector<std::thread> threads;
  for (int i = 0; i < 3; ++i) threads.emplace_back([&] { echo(*pair.worker, stop); });
  std::mutex seen_mutex;
  std::map<std::uint64_t, int> seen;
  std::atomic<int> results{0};
  for (int i = 0; i < 3; ++i) {
    threads.emplace_back([&] {
      while (results < kItems && !stop) {
        auto result = pair.dispatcher->next_result(milliseconds(20));
        if (!result.ok()) continue;
        ++results;
        std::lock_guard<std::mutex> lock(seen_mutex);
        ++seen[result->work_id];
      }
    });
  }
  for (std::uint64_t id = 1; id <= kItems; ++id) {
    ASSERT_TRUE(pair.dispatcher->submit(item(id), milliseconds(10000)).ok());
  }
  EXPECT_TRUE(eventually([&] { return results.load() >= kItems; })) << results.load();
  stop = true;
  for (auto& t : threads) t.join();
  EXPECT_EQ(seen.size(), static_cast<std::size_t>(kItems));
  for (const auto& [id, count] : seen) EXPECT_EQ(count, 1) << "work " << id;
  EXPECT_TRUE(eventually([&] { return pair.dispatcher->stats().credits == 8; }));
}

TEST(SharedSocket, AcksAndCreditsAreHandledWhileNoOneWaitsForResults) {
  constexpr int kItems = 20;
  Pair pair = start_pair(/*capacity=*/2);
  ASSERT_NE(pair.worker, nullptr);
  std::atomic<bool> stop{false};
  std::thread worker_thread([&] { echo(*pair.worker, stop); });
  ASSERT_TRUE(eventually([&] { return pair.dispatcher->stats().credits == 2; }));
  // Two credits for twenty items: the rest goes out only as acks bring credits back, and nobody
  // calls next_result() meanwhile.
  for (std::uint64_t id = 1; id <= kItems; ++id) {
    ASSERT_TRUE(pair.dispatcher->submit(item(id), milliseconds(1000)).ok());
  }
  EXPECT_TRUE(eventually([&] { return pair.dispatcher->stats().completed == kItems; }))
      << "completed " << pair.dispatcher->stats().completed;
  for (int i = 0; i < kItems; ++i) {
    // All waiting already: a zero timeout still finds each.
    EXPECT_TRUE(pair.dispatcher->next_result(milliseconds(0)).ok()) << "result " << i;
  }
  stop = true;
  worker_thread.join();
}

TEST(SharedSocket, LongWaitsOnBothSidesKeepHeartbeatsGoing) {
  Pair pair = start_pair(/*capacity=*/1);
  ASSERT_NE(pair.worker, nullptr);
  ASSERT_TRUE(eventually([&] { return pair.dispatcher->stats().workers == 1; }));
  // Each side waits in one call for 20 heartbeat intervals (misses_before_dead is 3), with
  // nothing to receive: each holds its socket the whole time.
  std::thread learner([&] {
    EXPECT_EQ(pair.dispatcher->next_result(milliseconds(20 * kIntervalMs)).status().code(),
              StatusCode::kTimeout);
  });
  EXPECT_EQ(pair.worker->receive(milliseconds(20 * kIntervalMs)).status().code(),
            StatusCode::kTimeout);
  learner.join();
  const DispatcherStats stats = pair.dispatcher->stats();
  EXPECT_EQ(stats.workers_dead, 0u);
  EXPECT_EQ(stats.workers, 1u);
  EXPECT_EQ(stats.credits, 1u);
  EXPECT_EQ(pair.worker->stats().hellos_sent, 1u);  // never thought the learner had gone
  // And work still flows at once afterwards.
  ASSERT_TRUE(pair.dispatcher->submit(item(7), milliseconds(1000)).ok());
  auto work = pair.worker->receive(milliseconds(5000));
  ASSERT_TRUE(work.ok()) << work.status().to_string();
  EXPECT_EQ(work->root().getBody().getEvalRequest().getWorkId(), 7u);
}

TEST(SharedSocket, CloseWakesAThreadAsleepOnTheSocket) {
  Pair pair = start_pair(/*capacity=*/1);
  ASSERT_NE(pair.worker, nullptr);
  std::thread learner([&] {
    EXPECT_EQ(pair.dispatcher->next_result(milliseconds(60000)).status().code(),
              StatusCode::kAborted);
  });
  std::thread worker([&] {
    EXPECT_EQ(pair.worker->receive(milliseconds(60000)).status().code(), StatusCode::kAborted);
  });
  std::this_thread::sleep_for(milliseconds(100));  // both asleep on their sockets by now
  const auto start = std::chrono::steady_clock::now();
  pair.worker->close();
  pair.dispatcher->close();
  learner.join();
  worker.join();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
}

}  // namespace
}  // namespace dice::transport
