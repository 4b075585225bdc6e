// Reused verdicts (reward.reuse_verdicts): the memo's key, its waiting and bound, and the worker
// that copies a repeat's verdict instead of judging it again (extraction_only mode, so the real
// pipeline runs without nvcc or a GPU).
#include "reward/verdict_memo.h"

#include <capnp/message.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "net/wire/envelope.h"
#include "net/wire/wire.h"
#include "reward/reward_worker.h"

namespace dice {
namespace {

using FC = schema::FailureClass;

void fill_request(schema::EvalRequest::Builder r, std::uint64_t work_id, const std::string& task,
                  const std::string& text) {
  r.setWorkId(work_id);
  auto t = r.initTask();
  t.setId(task);
  t.setReferenceSource("import torch\nclass Model(torch.nn.Module):\n    pass\n");
  auto c = r.initCandidate();
  c.setRunId("run-a");
  c.setStep(work_id * 10);
  c.setGroup(work_id * 100);
  c.setSampleIndex(static_cast<std::uint32_t>(work_id));
  c.setPolicyVersion(7);
  c.setText(text);
}

std::string key_of(const std::string& task, const std::string& text, std::uint64_t work_id = 1) {
  capnp::MallocMessageBuilder m;
  auto r = m.initRoot<schema::EvalRequest>();
  fill_request(r, work_id, task, text);
  return VerdictMemo::key(r.asReader());
}

// A judged verdict, as the pipeline leaves it, in its own message.
struct JudgedVerdict {
  capnp::MallocMessageBuilder message;
  schema::Verdict::Builder verdict = message.initRoot<schema::Verdict>();
  JudgedVerdict(std::uint64_t work_id, FC failure) {
    verdict.setWorkId(work_id);
    verdict.setFailure(failure);
    verdict.setCompiled(true);
    verdict.setCorrect(failure == FC::NONE);
    verdict.setReward(failure == FC::NONE ? 1.0f : 0.0f);
    verdict.setEvaluatedSource("import torch\n");
  }
};

TEST(VerdictMemoTest, KeyIsTheTaskAndTheTextAndNothingElse) {
  EXPECT_EQ(key_of("t1", "```python\nx\n```"), key_of("t1", "```python\nx\n```", 2));
  EXPECT_NE(key_of("t1", "```python\nx\n```"), key_of("t2", "```python\nx\n```"));
  EXPECT_NE(key_of("t1", "```python\nx\n```"), key_of("t1", "```python\ny\n```"));
  capnp::MallocMessageBuilder m;
  auto r = m.initRoot<schema::EvalRequest>();
  fill_request(r, 1, "t1", "```python\nx\n```");
  r.getTask().setWantTiming(false);  // any task field: a timed and an untimed verdict differ
  EXPECT_NE(VerdictMemo::key(r.asReader()), key_of("t1", "```python\nx\n```"));
}

TEST(VerdictMemoTest, TheFirstJudgesRepeatsWaitAndCopy) {
  VerdictMemo memo;
  const std::string key = key_of("t1", "a");
  ASSERT_EQ(memo.acquire(key), nullptr);  // the first caller judges
  std::atomic<bool> got{false};
  VerdictMemo::Stored seen;
  std::thread repeat([&] {
    seen = memo.acquire(key);
    got = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_FALSE(got) << "a repeat must wait while the original is judged";
  JudgedVerdict judged(11, FC::INCORRECT);
  memo.finish(key, judged.verdict.asReader());
  repeat.join();
  ASSERT_NE(seen, nullptr);
  EXPECT_EQ(memo.acquire(key), seen);
  EXPECT_EQ(memo.size(), 1u);
}

TEST(VerdictMemoTest, FaultsAndTimeLimitsAreJudgedAgain) {
  for (FC failure :
       {FC::INTERNAL_ERROR, FC::SANDBOX_UNAVAILABLE, FC::TIMEOUT, FC::COMPILE_TIMEOUT}) {
    VerdictMemo memo;
    const std::string key = key_of("t1", "a");
    ASSERT_EQ(memo.acquire(key), nullptr);
    JudgedVerdict judged(1, failure);
    memo.finish(key, judged.verdict.asReader());
    EXPECT_EQ(memo.acquire(key), nullptr) << "not kept: the next one judges again";
    memo.abandon(key);
  }
  for (FC failure : {FC::NONE, FC::COMPILE_ERROR, FC::INCORRECT, FC::ANTI_CHEAT, FC::CRASHED}) {
    EXPECT_TRUE(verdict_reusable(failure));
  }
}

TEST(VerdictMemoTest, AnAbandonedJudgementWakesARepeatToJudgeItself) {
  VerdictMemo memo;
  const std::string key = key_of("t1", "a");
  ASSERT_EQ(memo.acquire(key), nullptr);
  VerdictMemo::Stored seen = std::make_shared<const kj::Array<capnp::word>>();
  std::thread repeat([&] { seen = memo.acquire(key); });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  memo.abandon(key);
  repeat.join();
  EXPECT_EQ(seen, nullptr);
}

TEST(VerdictMemoTest, KeepsAtMostMaxEntriesDroppingTheOldest) {
  VerdictMemo memo(2);
  for (const char* text : {"a", "b", "c"}) {
    const std::string key = key_of("t1", text);
    ASSERT_EQ(memo.acquire(key), nullptr);
    JudgedVerdict judged(1, FC::NONE);
    memo.finish(key, judged.verdict.asReader());
  }
  EXPECT_EQ(memo.size(), 2u);
  EXPECT_NE(memo.acquire(key_of("t1", "c")), nullptr);
  EXPECT_NE(memo.acquire(key_of("t1", "b")), nullptr);
  EXPECT_EQ(memo.acquire(key_of("t1", "a")), nullptr);  // dropped: judged again
}

// Collects what the worker sends.
class CollectingSinkTestDouble : public service::ResultSink {
 public:
  schema::Envelope::Builder init_envelope(capnp::MessageBuilder& message) override {
    return wire::init_envelope(message, "reward-test", "run-a");
  }
  Status send(capnp::MessageBuilder& message) override {
    sent.push_back(wire::encode(message));
    return Status::ok_status();
  }
  std::vector<std::string> sent;
};

wire::Decoded<schema::Envelope> request_envelope(std::uint64_t work_id, const std::string& task,
                                                 const std::string& text) {
  capnp::MallocMessageBuilder m;
  auto envelope = wire::init_envelope(m, "learner-test", "run-a");
  fill_request(envelope.getBody().initEvalRequest(), work_id, task, text);
  auto decoded = wire::decode_envelope(wire::encode(m));
  EXPECT_TRUE(decoded.ok()) << decoded.status().to_string();
  return std::move(decoded).value();
}

TEST(RewardWorkerReuseTest, ARepeatGetsTheOriginalsVerdictWithItsOwnIdentity) {
  for (bool reuse : {true, false}) {
    RewardOptions options;
    options.mode = RewardMode::kExtractionOnly;
    options.reuse_verdicts = reuse;
    options.prestart_evaluators = false;
    options.compile_cache_dir = testing::TempDir() + "verdict_memo_test_cache";
    service::MetricsRegistry registry;
    RewardWorker worker(options, Toolchain{}, PipelineIdentity{"reward-w", {}}, registry);
    const std::string code =
        "```python\nimport torch\nclass ModelNew(torch.nn.Module):\n"
        "    def forward(self, x):\n        return x\n```\n";
    CollectingSinkTestDouble sink;
    ASSERT_TRUE(worker.handle(request_envelope(1, "t1", code), sink).ok());
    ASSERT_TRUE(worker.handle(request_envelope(2, "t1", code), sink).ok());
    ASSERT_TRUE(worker.handle(request_envelope(3, "t2", code), sink).ok());
    ASSERT_EQ(sink.sent.size(), 3u);
    std::vector<wire::Decoded<schema::Envelope>> out;
    for (const auto& bytes : sink.sent) {
      auto d = wire::decode_envelope(bytes);
      ASSERT_TRUE(d.ok());
      out.push_back(std::move(d).value());
    }
    auto first = out[0].root().getBody().getVerdict();
    auto repeat = out[1].root().getBody().getVerdict();
    auto other_task = out[2].root().getBody().getVerdict();
    EXPECT_EQ(first.getReusedFrom(), 0u);
    EXPECT_EQ(repeat.getReusedFrom(), reuse ? 1u : 0u);
    EXPECT_EQ(other_task.getReusedFrom(), 0u) << "another task is judged on its own";
    // The repeat's identity is its own request's; its outcome the original's.
    EXPECT_EQ(repeat.getWorkId(), 2u);
    EXPECT_EQ(repeat.getStep(), 20u);
    EXPECT_EQ(repeat.getGroup(), 200u);
    EXPECT_EQ(repeat.getSampleIndex(), 2u);
    EXPECT_EQ(repeat.getPolicyVersion(), 7u);
    EXPECT_STREQ(repeat.getRewardWorker().cStr(), "reward-w");
    EXPECT_EQ(repeat.getFailure(), first.getFailure());
    EXPECT_EQ(repeat.getReward(), first.getReward());
    EXPECT_STREQ(repeat.getEvaluatedSource().cStr(), first.getEvaluatedSource().cStr());
    EXPECT_FALSE(std::string(first.getEvaluatedSource().cStr()).empty());
    ASSERT_EQ(repeat.getFindings().size(), first.getFindings().size());
  }
}

}  // namespace
}  // namespace dice
