// Cancelled work frees its worker's slot, end to end: a WorkDispatcher in this process, the real
// worker loop in a child process (slow_worker_test_double) over a real loopback socket. The item
// a worker is handling is cancelled; the worker stops it, answers nothing for it, and takes the
// next item long before the cancelled one would have finished. Every wait polls with a deadline.
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <thread>

#include "net/transport/work_dispatcher.h"
#include "tests/support/child_process.h"
#include "tests/support/eventually.h"

namespace dice::transport {
namespace {

using std::chrono::milliseconds;
using testing_util::ChildProcess;

constexpr double kLongItemSeconds = 60;  // what the cancelled item would take
constexpr auto kDeadline = std::chrono::seconds(20);

bool eventually(const std::function<bool()>& condition) {
  return testing_util::eventually(condition, kDeadline);
}

std::string read_log(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

bool logged(const std::string& path, const std::string& line) {
  return ("\n" + read_log(path)).find("\n" + line + "\n") != std::string::npos;
}

// An evaluation the test double works on for `seconds`.
WorkItem eval_item(std::uint64_t work_id, double seconds) {
  capnp::MallocMessageBuilder message;
  auto request = wire::init_envelope(message, "learner", "run").getBody().initEvalRequest();
  request.setWorkId(work_id);
  request.getTask().setId("task-" + std::to_string(work_id));
  request.getTask().setTimeoutSeconds(static_cast<float>(seconds));
  return WorkItem{work_id, wire::encode(message), schema::Role::REWARD};
}

TEST(WorkerCancel, ACancelledItemFreesItsSlotForTheNextItemAndIsNotAnswered) {
  DispatcherOptions options;
  options.bind_endpoint = "tcp://127.0.0.1:*";
  options.heartbeat_interval_ms = 100;
  options.misses_before_dead = 50;
  auto started = WorkDispatcher::start(options);
  ASSERT_TRUE(started.ok()) << started.status().to_string();
  WorkDispatcher& dispatcher = **started;
  const std::string log = ::testing::TempDir() + "/slow_worker_" + std::to_string(getpid());
  ChildProcess worker(DICE_SLOW_WORKER, {dispatcher.endpoint(), "node/reward/0"}, log);

  ASSERT_TRUE(dispatcher.submit(eval_item(1, kLongItemSeconds), milliseconds(0)).ok());
  ASSERT_TRUE(dispatcher.submit(eval_item(2, 0), milliseconds(0)).ok());
  ASSERT_TRUE(eventually([&] { return logged(log, "started 1"); })) << read_log(log);
  EXPECT_EQ(dispatcher.stats().pending, 1u) << "item 2 waits for the one slot";

  const auto cancelled_at = std::chrono::steady_clock::now();
  EXPECT_EQ(dispatcher.cancel({1}), 1u);
  EXPECT_EQ(dispatcher.cancel({1}), 0u) << "cancelled twice";
  // Item 2's verdict, well before item 1 could have ended by itself; nothing for item 1.
  auto result = dispatcher.next_result(std::chrono::duration_cast<milliseconds>(kDeadline));
  ASSERT_TRUE(result.ok()) << result.status().to_string() << "\n" << read_log(log);
  EXPECT_EQ(result->work_id, 2u);
  EXPECT_LT(std::chrono::steady_clock::now() - cancelled_at,
            std::chrono::duration<double>(kLongItemSeconds / 2));
  EXPECT_TRUE(logged(log, "stopped 1")) << read_log(log);
  EXPECT_TRUE(logged(log, "started 2")) << read_log(log);

  // Printed after the verdict was queued, so it may come after the verdict arrived.
  EXPECT_TRUE(eventually([&] { return logged(log, "answered 2"); })) << read_log(log);
  EXPECT_FALSE(logged(log, "answered 1")) << read_log(log);
  auto stats = dispatcher.stats();
  EXPECT_EQ(stats.cancelled_in_flight, 1u);
  EXPECT_EQ(stats.cancelled, 0u);
  EXPECT_EQ(stats.results_delivered, 1u);
  EXPECT_TRUE(eventually([&] { return dispatcher.stats().completed == 2; }));
  EXPECT_EQ(dispatcher.cancel({2}), 0u) << "a cancel for a finished item";
  EXPECT_EQ(dispatcher.next_result(milliseconds(200)).status().code(), StatusCode::kTimeout)
      << "an answer for the cancelled item came through";
}

}  // namespace
}  // namespace dice::transport
