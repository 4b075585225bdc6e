#include "rewardlog/record_codec.h"

#include <capnp/message.h>
#include <capnp/serialize.h>
#include <gtest/gtest.h>

#include <random>
#include <string>

#include "tests/rewardlog/rewardlog_test_util.h"

namespace dice::rewardlog {
namespace {

using namespace std::string_literals;
using testing::candidate_record;
using testing::kernel_record;
using testing::metric_record;
using testing::run_record;
using testing::step_record;

TEST(RewardLogRecordCodecTest, EachRecordGoesToItsFamilyUnderTheKeyItsFieldsGive) {
  EXPECT_EQ(run_record("r1").family, Family::kRuns);
  EXPECT_EQ(run_record("r1").key, run_key("r1"));
  EXPECT_EQ(step_record("r1", 4).family, Family::kSteps);
  EXPECT_EQ(step_record("r1", 4).key, step_key("r1", 4));
  const LogRecord c = candidate_record("r1", 4, "t7", 3);
  EXPECT_EQ(c.family, Family::kCandidates);
  EXPECT_EQ(c.key, candidate_key("r1", 4, "t7", 3));
  const LogRecord k = kernel_record("__global__ void k(){}");
  EXPECT_EQ(k.family, Family::kKernels);
  EXPECT_EQ(k.key, kernel_source_hash("__global__ void k(){}", "-O3", "nvcc 13.0 sm_90"));
  EXPECT_EQ(metric_record("r1", "loss", 2, 0.5).key, metric_key("r1", "loss", 2));
}

TEST(RewardLogRecordCodecTest, ValueIsAStandardUnpackedCapnpMessage) {
  const LogRecord s = step_record("r1", 9, 0.75f);
  ASSERT_EQ(s.value.size() % 8, 0u);
  // Decode with plain Cap'n Proto, as a reader outside dice would.
  kj::Array<capnp::word> words = kj::heapArray<capnp::word>(s.value.size() / 8);
  memcpy(words.begin(), s.value.data(), s.value.size());
  capnp::FlatArrayMessageReader message(words);
  auto step = message.getRoot<schema::StepRecord>();
  EXPECT_EQ(std::string(step.getRunId().cStr()), "r1");
  EXPECT_EQ(step.getStep(), 9u);
  EXPECT_FLOAT_EQ(step.getMeanReward(), 0.75f);
}

TEST(RewardLogRecordCodecTest, DecodeRoundTripsEveryType) {
  const LogRecord c = candidate_record("r1", 4, "t7", 3, "abc123", "hello \"world\"");
  auto candidate = decode_record<schema::CandidateRecord>(c.key, c.value);
  ASSERT_TRUE(candidate.ok()) << candidate.status().to_string();
  EXPECT_EQ(candidate->key(), c.key);
  EXPECT_EQ(std::string(candidate->get().getResponseText().cStr()), "hello \"world\"");
  EXPECT_EQ(std::string(candidate->get().getVerdict().getBuilds()[0].getSourceHash().cStr()),
            "abc123");
  EXPECT_EQ(candidate->get().getVerdict().getFindings().size(), 1u);

  const LogRecord r = run_record("r1", "first try");
  auto run = decode_record<schema::RunRecord>(r.key, r.value);
  ASSERT_TRUE(run.ok());
  EXPECT_EQ(std::string(run->get().getNote().cStr()), "first try");

  const LogRecord k = kernel_record("src");
  auto kernel = decode_record<schema::KernelRecord>(k.key, k.value);
  ASSERT_TRUE(kernel.ok());
  EXPECT_EQ(std::string(kernel->get().getCompileLog().cStr()), "nvcc: src");

  const LogRecord m = metric_record("r1", "reward/correct_rate", 12, 0.125);
  auto metric = decode_record<schema::MetricRecord>(m.key, m.value);
  ASSERT_TRUE(metric.ok());
  EXPECT_DOUBLE_EQ(metric->get().getValue(), 0.125);

  // The decoded record owns its bytes: it stays valid after a move.
  auto moved = std::move(metric).value();
  EXPECT_EQ(moved.get().getStep(), 12u);
}

TEST(RewardLogRecordCodecTest, EncodeRejectsRecordsWithoutAUsableKey) {
  capnp::MallocMessageBuilder m;
  auto step = m.initRoot<schema::StepRecord>();
  Result<LogRecord> empty = encode_record(step.asReader());
  EXPECT_EQ(empty.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(empty.status().message().find("StepRecord"), std::string::npos);
  EXPECT_NE(empty.status().message().find("runId"), std::string::npos);

  auto candidate = m.initRoot<schema::CandidateRecord>();
  EXPECT_NE(encode_record(candidate.asReader()).status().message().find("verdict"),
            std::string::npos);
  auto v = candidate.initVerdict();
  v.setRunId("r");
  v.setTaskId(capnp::Text::Reader("a\0b", 3));
  EXPECT_NE(encode_record(candidate.asReader()).status().message().find("verdict.taskId"),
            std::string::npos);

  auto kernel = m.initRoot<schema::KernelRecord>();
  kernel.setSourceHash("Not-Hex");
  EXPECT_EQ(encode_record(kernel.asReader()).status().code(), StatusCode::kInvalidArgument);
}

TEST(RewardLogRecordCodecTest, GarbageValueIsCorruptionNamingTheKey) {
  const std::string key = step_key("run-7", 3);
  for (const std::string& garbage :
       {""s, "abc"s, std::string(8, '\xff'), std::string(64, '\x7f'), std::string(16, '\0')}) {
    auto decoded = decode_record<schema::StepRecord>(key, garbage);
    ASSERT_FALSE(decoded.ok());
    EXPECT_EQ(decoded.status().code(), StatusCode::kCorruption);
    EXPECT_NE(decoded.status().message().find("steps/run-7/step=3"), std::string::npos)
        << decoded.status().message();
  }
}

TEST(RewardLogRecordCodecTest, RandomBytesNeverCrashAndNeverPassAsARecord) {
  const unsigned seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  const LogRecord valid = candidate_record("r1", 4, "t7", 3, "abc", std::string(300, 'x'));
  for (int i = 0; i < 2000; ++i) {
    std::string bytes;
    if (i % 2 == 0) {
      bytes.resize(8 * (rng() % 32));
      for (char& b : bytes) b = static_cast<char>(rng());
    } else {
      // A valid message with a few bytes flipped or cut short.
      bytes = valid.value;
      for (int flips = 0; flips < 3; ++flips) bytes[rng() % bytes.size()] ^= 1 + rng() % 255;
      if (rng() % 4 == 0) bytes.resize(8 * (rng() % (bytes.size() / 8)));
    }
    auto decoded = decode_record<schema::CandidateRecord>(valid.key, bytes);
    if (decoded.ok()) {
      // A flip inside free text leaves a valid record; everything else must be reported.
      EXPECT_EQ(decoded->key(), valid.key);
    } else {
      EXPECT_EQ(decoded.status().code(), StatusCode::kCorruption);
    }
  }
}

TEST(RewardLogRecordCodecTest, TrailingBytesAreCorruption) {
  const LogRecord s = step_record("r1", 1);
  auto decoded = decode_record<schema::StepRecord>(s.key, s.value + std::string(8, '\0'));
  ASSERT_FALSE(decoded.ok());
  EXPECT_NE(decoded.status().message().find("trailing"), std::string::npos);
}

TEST(RewardLogRecordCodecTest, RecordUnderTheWrongKeyIsCorruption) {
  const LogRecord s = step_record("r1", 1);
  auto decoded = decode_record<schema::StepRecord>(step_key("r1", 2), s.value);
  ASSERT_FALSE(decoded.ok());
  EXPECT_EQ(decoded.status().code(), StatusCode::kCorruption);
  EXPECT_NE(decoded.status().message().find("steps/r1/step=2"), std::string::npos);
  EXPECT_NE(decoded.status().message().find("steps/r1/step=1"), std::string::npos);
}

TEST(RewardLogRecordCodecTest, TextWithoutNulTerminatorIsCorruption) {
  // Build a RunRecord whose note is a Data blob (no NUL) by writing it through an AnyPointer
  // view of the same pointer slot: a damaged text field that still has valid pointers.
  capnp::MallocMessageBuilder m;
  auto run = m.initRoot<schema::RunRecord>();
  run.setRunId("r1");
  capnp::AnyStruct::Builder any = capnp::toAny(run);
  const kj::byte bytes[] = {'a', 'b', 'c'};
  any.getPointerSection()[4].setAs<capnp::Data>(capnp::Data::Reader(bytes, 3));
  const kj::Array<capnp::word> words = capnp::messageToFlatArray(m);
  const std::string value(reinterpret_cast<const char*>(words.asBytes().begin()),
                          words.asBytes().size());
  auto decoded = decode_record<schema::RunRecord>(run_key("r1"), value);
  ASSERT_FALSE(decoded.ok());
  EXPECT_EQ(decoded.status().code(), StatusCode::kCorruption);
  EXPECT_NE(decoded.status().message().find("runs/r1"), std::string::npos);
}

}  // namespace
}  // namespace dice::rewardlog
