// CURVE between the learner and its workers (cluster.transport.curve): the run's key files
// (curve_keys.h), and the transport over real loopback sockets with keys right, wrong and absent.
#include <sys/stat.h>

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <thread>

#include "net/transport/curve_keys.h"
#include "net/transport/work_dispatcher.h"
#include "net/transport/worker_connection.h"
#include "tests/support/eventually.h"
#include "tests/support/temp_dir.h"

namespace dice::transport {
namespace {

using std::chrono::milliseconds;
using Body = schema::Envelope::Body;
namespace fs = std::filesystem;

constexpr int kHeartbeatMs = 50;

unsigned mode_of(const std::string& path) {
  struct stat info {};
  EXPECT_EQ(::stat(path.c_str(), &info), 0) << path;
  return info.st_mode & 0777;
}

bool eventually(const std::function<bool()>& condition, milliseconds limit = milliseconds(10000)) {
  return testing_util::eventually(condition, limit);
}

TEST(CurveKeysTest, EnsureMakesPrivateFilesAndKeepsExistingPairs) {
  testing_util::TempDir temp;
  const std::string dir = temp.path() + "/keys";
  ASSERT_TRUE(ensure_curve_keys(dir, {"learner", "rollout-0"}).ok());
  EXPECT_EQ(mode_of(dir), 0700u);
  for (const char* file : {"learner.key", "learner.pub", "rollout-0.key", "rollout-0.pub"}) {
    EXPECT_EQ(mode_of(dir + "/" + file), 0600u) << file;
  }
  auto first = read_curve_key_pair(dir, "rollout-0");
  ASSERT_TRUE(first.ok()) << first.status().to_string();
  EXPECT_EQ(first->public_key.size(), 40u);
  EXPECT_NE(first->public_key, first->secret_key);
  auto public_key = read_curve_public_key(dir, "rollout-0");
  ASSERT_TRUE(public_key.ok());
  EXPECT_EQ(*public_key, first->public_key);
  // A second up (a restart) keeps each service's identity and adds what is new.
  ASSERT_TRUE(ensure_curve_keys(dir, {"learner", "rollout-0", "reward-0"}).ok());
  auto again = read_curve_key_pair(dir, "rollout-0");
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->secret_key, first->secret_key);
  auto clients = read_curve_public_keys(dir, "learner");
  ASSERT_TRUE(clients.ok()) << clients.status().to_string();
  ASSERT_EQ(clients->size(), 2u);
  EXPECT_EQ(clients->at(first->public_key), "rollout-0");
}

TEST(CurveKeysTest, RefusesAKeyFileOthersMayReadAndAMalformedOne) {
  testing_util::TempDir temp;
  const std::string dir = temp.path() + "/keys";
  ASSERT_TRUE(ensure_curve_keys(dir, {"reward-0", "reward-1"}).ok());
  ASSERT_EQ(::chmod((dir + "/reward-0.key").c_str(), 0644), 0);
  auto readable = read_curve_key_pair(dir, "reward-0");
  ASSERT_FALSE(readable.ok());
  EXPECT_NE(readable.status().message().find("0644"), std::string::npos)
      << readable.status().to_string();
  std::ofstream(dir + "/reward-1.pub", std::ios::trunc) << "public: not-a-key\n";
  auto malformed = read_curve_public_key(dir, "reward-1");
  ASSERT_FALSE(malformed.ok());
  EXPECT_NE(malformed.status().message().find("reward-1.pub:1"), std::string::npos)
      << malformed.status().to_string();
  auto missing = read_curve_key_pair(dir, "rollout-7");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
}

TEST(CurveKeysTest, AKeyNameBindsOneWorkerId) {
  EXPECT_TRUE(worker_id_matches_key_name("gpu-3/rollout/0", "rollout-0"));
  EXPECT_TRUE(worker_id_matches_key_name("a/b/reward/12", "reward-12"));
  EXPECT_FALSE(worker_id_matches_key_name("gpu-3/rollout/10", "rollout-0"));
  EXPECT_FALSE(worker_id_matches_key_name("gpu-3/reward/0", "rollout-0"));
  EXPECT_FALSE(worker_id_matches_key_name("/rollout/0", "rollout-0"));
  EXPECT_FALSE(worker_id_matches_key_name("gpu-3/rollout/0", ""));
  EXPECT_FALSE(worker_id_matches_key_name("gpu-3/rollout/0", "rollout-"));
}

// A learner with the run's keys and a worker that connects with the key pair `key_name` (or none).
class CurveTransportTest : public ::testing::Test {
 protected:
  void SetUp() override {
    keys_ = temp_.path() + "/keys";
    ASSERT_TRUE(ensure_curve_keys(keys_, {"learner", "rollout-0", "rollout-1"}).ok());
    DispatcherOptions options;
    options.heartbeat_interval_ms = kHeartbeatMs;
    auto learner = read_curve_key_pair(keys_, "learner");
    ASSERT_TRUE(learner.ok());
    options.curve.public_key = learner->public_key;
    options.curve.secret_key = learner->secret_key;
    auto clients = read_curve_public_keys(keys_, "learner");
    ASSERT_TRUE(clients.ok());
    options.curve.client_keys = *clients;
    auto dispatcher = WorkDispatcher::start(options);
    ASSERT_TRUE(dispatcher.ok()) << dispatcher.status().to_string();
    dispatcher_ = std::move(dispatcher).value();
  }

  // A worker claiming `worker_id`; `key_name` empty: plain TCP; "stranger": a key the run lacks.
  std::unique_ptr<WorkerConnection> worker(const std::string& worker_id,
                                           const std::string& key_name) {
    WorkerOptions options;
    options.learner_endpoint = dispatcher_->endpoint();
    options.worker_id = worker_id;
    options.role = schema::Role::ROLLOUT;
    options.heartbeat_interval_ms = kHeartbeatMs;
    if (!key_name.empty()) {
      auto learner = read_curve_public_key(keys_, "learner");
      EXPECT_TRUE(learner.ok());
      options.curve.server_key = *learner;
      auto pair =
          key_name == "stranger" ? make_curve_key_pair() : read_curve_key_pair(keys_, key_name);
      EXPECT_TRUE(pair.ok()) << pair.status().to_string();
      options.curve.public_key = pair->public_key;
      options.curve.secret_key = pair->secret_key;
    }
    auto connection = WorkerConnection::start(options);
    EXPECT_TRUE(connection.ok()) << connection.status().to_string();
    return std::move(connection).value();
  }

  bool registered(const std::string& worker_id) const {
    for (const WorkerSnapshot& w : dispatcher_->stats().worker_list) {
      if (w.worker_id == worker_id) return true;
    }
    return false;
  }

  static WorkItem rollout_item(std::uint64_t work_id) {
    capnp::MallocMessageBuilder message;
    auto request = wire::init_envelope(message, "learner", "run").getBody().initRolloutRequest();
    request.setWorkId(work_id);
    request.setNumSamples(1);
    return WorkItem{work_id, wire::encode(message), schema::Role::ROLLOUT};
  }

  // Has `connection` answer one rollout item with a candidate; returns the id of the worker the
  // learner credits the result to.
  std::string round_trip(WorkerConnection& connection, std::uint64_t work_id) {
    EXPECT_TRUE(dispatcher_->submit(rollout_item(work_id), milliseconds(1000)).ok());
    auto work = connection.receive(milliseconds(10000));
    EXPECT_TRUE(work.ok()) << work.status().to_string();
    if (!work.ok()) return "";
    capnp::MallocMessageBuilder message;
    auto candidate = connection.init_envelope(message).getBody().initCandidate();
    candidate.setWorkId(work_id);
    EXPECT_TRUE(connection.finish(work_id, message, milliseconds(1000)).ok());
    auto result = dispatcher_->next_result(milliseconds(10000));
    EXPECT_TRUE(result.ok()) << result.status().to_string();
    return result.ok() ? result->worker_id : "";
  }

  testing_util::TempDir temp_;
  std::string keys_;
  std::unique_ptr<WorkDispatcher> dispatcher_;
};

TEST_F(CurveTransportTest, AWorkerWithItsKeyRegistersAndIsAnswered) {
  auto connection = worker("node-a/rollout/0", "rollout-0");
  ASSERT_TRUE(eventually([&] { return registered("node-a/rollout/0"); }));
  EXPECT_EQ(round_trip(*connection, 1), "node-a/rollout/0");
}

TEST_F(CurveTransportTest, AKeyTheRunLacksOrNoKeyAtAllIsRefused) {
  auto stranger = worker("node-x/rollout/0", "stranger");
  auto plain = worker("node-y/rollout/1", "");
  auto genuine = worker("node-a/rollout/1", "rollout-1");
  ASSERT_TRUE(eventually([&] { return registered("node-a/rollout/1"); }));
  // Both others have had many Hello periods by now: neither got through the handshake.
  std::this_thread::sleep_for(milliseconds(10 * kHeartbeatMs));
  EXPECT_FALSE(registered("node-x/rollout/0"));
  EXPECT_FALSE(registered("node-y/rollout/1"));
  EXPECT_EQ(dispatcher_->stats().workers, 1u);
}

TEST_F(CurveTransportTest, AValidKeyCannotTakeOverAnotherWorkersIdentity) {
  auto genuine = worker("node-a/rollout/0", "rollout-0");
  ASSERT_TRUE(eventually([&] { return registered("node-a/rollout/0"); }));
  // rollout-1's key is the run's, but it names another worker: its Hello is refused, and the
  // genuine worker keeps its registration and its work.
  auto impostor = worker("node-a/rollout/0", "rollout-1");
  ASSERT_TRUE(eventually([&] { return dispatcher_->stats().identity_refusals >= 2; }));
  EXPECT_EQ(round_trip(*genuine, 7), "node-a/rollout/0");
  EXPECT_EQ(dispatcher_->stats().workers, 1u);
}

}  // namespace
}  // namespace dice::transport
