// WorkDispatcher and WorkerConnection in one process over real loopback: many items in flight,
// small and large payloads (large ones travel by reference and are read in place), each result
// delivered exactly once with its bytes intact, and every credit back when the work is done; with
// and without the spin before a wait sleeps.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <map>
#include <string>
#include <thread>

#include "net/transport/work_dispatcher.h"
#include "net/transport/worker_connection.h"

namespace dice::transport {
namespace {

using std::chrono::milliseconds;
using Body = schema::Envelope::Body;

constexpr std::uint32_t kCapacity = 8;
constexpr int kItems = 200;

std::string text_for(std::uint64_t work_id, std::size_t bytes) {
  std::string text(bytes, static_cast<char>('a' + work_id % 26));
  text.replace(0, std::to_string(work_id).size(), std::to_string(work_id));
  return text;
}

// Answers each EvalRequest with a Verdict whose logExcerpt is the prompt reversed.
void echo(WorkerConnection& worker, const std::atomic<bool>& stop) {
  while (!stop) {
    auto work = worker.receive(milliseconds(50));
    if (!work.ok() || work->root().getBody().which() != Body::EVAL_REQUEST) continue;
    auto request = work->root().getBody().getEvalRequest();
    std::string prompt = request.getTask().getPrompt().cStr();
    capnp::MallocMessageBuilder message;
    auto verdict = worker.init_envelope(message).getBody().initVerdict();
    verdict.setWorkId(request.getWorkId());
    verdict.setLogExcerpt(std::string(prompt.rbegin(), prompt.rend()));
    ASSERT_TRUE(worker.send_result(wire::encode(message), milliseconds(5000)).ok());
    ASSERT_TRUE(worker.finish(request.getWorkId()).ok());
  }
}

void round_trips(std::size_t payload_bytes, int poll_spin_us = 0) {
  DispatcherOptions dispatcher_options;
  dispatcher_options.poll_spin_us = poll_spin_us;
  dispatcher_options.heartbeat_interval_ms = 100;
  dispatcher_options.queue_capacity = 4;  // submit() waits on the queue bound too
  auto dispatcher = WorkDispatcher::start(dispatcher_options);
  ASSERT_TRUE(dispatcher.ok()) << dispatcher.status().to_string();
  WorkerOptions worker_options;
  worker_options.learner_endpoint = (*dispatcher)->endpoint();
  worker_options.worker_id = "node/reward/0";
  worker_options.role = schema::Role::REWARD;
  worker_options.capacity = kCapacity;
  worker_options.heartbeat_interval_ms = 100;
  worker_options.poll_spin_us = poll_spin_us;
  auto worker = WorkerConnection::start(worker_options);
  ASSERT_TRUE(worker.ok()) << worker.status().to_string();
  std::atomic<bool> stop{false};
  std::thread worker_thread([&] { echo(**worker, stop); });

  std::thread submitter([&] {
    for (std::uint64_t id = 1; id <= kItems; ++id) {
      capnp::MallocMessageBuilder message;
      auto request = wire::init_envelope(message, "learner", "run").getBody().initEvalRequest();
      request.setWorkId(id);
      request.getTask().setPrompt(text_for(id, payload_bytes));
      ASSERT_TRUE(
          (*dispatcher)
              ->submit(WorkItem{id, wire::encode(message), std::nullopt}, milliseconds(10000))
              .ok());
    }
  });
  std::map<std::uint64_t, int> seen;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (seen.size() < kItems && std::chrono::steady_clock::now() < deadline) {
    auto result = (*dispatcher)->next_result(milliseconds(100));
    if (!result.ok()) continue;
    auto verdict = result->envelope.root().getBody().getVerdict();
    const std::string expected = text_for(result->work_id, payload_bytes);
    EXPECT_EQ(verdict.getLogExcerpt().cStr(), std::string(expected.rbegin(), expected.rend()));
    ++seen[result->work_id];
  }
  submitter.join();
  EXPECT_EQ(seen.size(), static_cast<std::size_t>(kItems));
  for (const auto& [id, count] : seen) EXPECT_EQ(count, 1) << "work " << id;
  // Every ack arrives, and with it every credit: the worker can take kCapacity items again.
  bool settled = false;
  while (!settled && std::chrono::steady_clock::now() < deadline) {
    const DispatcherStats stats = (*dispatcher)->stats();
    settled = stats.completed == kItems && stats.credits == kCapacity && stats.in_flight == 0;
    if (!settled) std::this_thread::sleep_for(milliseconds(5));
  }
  EXPECT_TRUE(settled);
  EXPECT_EQ((*dispatcher)->stats().malformed_frames, 0u);
  stop = true;
  worker_thread.join();
}

TEST(RoundTrip, SmallPayloadsManyInFlight) {
  round_trips(1024);
}

TEST(RoundTrip, LargePayloadsManyInFlight) {
  round_trips(64 << 10);
}

// Waiting threads that check the socket without sleeping first (the default on 8+ CPUs) lose
// nothing and deliver each result once.
TEST(RoundTrip, SpinningWaitsManyInFlight) {
  round_trips(1024, /*poll_spin_us=*/100);
}

}  // namespace
}  // namespace dice::transport
