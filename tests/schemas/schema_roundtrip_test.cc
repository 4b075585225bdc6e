// Every schema struct survives encode -> bytes -> decode with every field intact.
#include <capnp/dynamic.h>
#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>

#include <functional>
#include <string>

#include "net/wire/wire.h"
#include "tests/schemas/schema_fixtures.h"

namespace dice::test {
namespace {

constexpr std::uint32_t kSalt = 42;

// Fills a T, checks the fill left no field at its default, encodes, decodes and checks each field.
template <typename T>
void expect_round_trip(const std::function<void(typename T::Builder)>& fill,
                       const std::function<void(typename T::Reader)>& expect) {
  capnp::MallocMessageBuilder message;
  auto root = message.initRoot<T>();
  fill(root);
  const std::string name = capnp::Schema::from<T>().getShortDisplayName().cStr();
  expect_no_default_fields(capnp::toDynamic(root.asReader()), name);

  const std::string bytes = wire::encode(message);
  ASSERT_EQ(bytes.size() % 8, 0u);
  Result<wire::Decoded<T>> decoded = wire::decode<T>(bytes);
  ASSERT_TRUE(decoded.ok()) << name << ": " << decoded.status().to_string();
  EXPECT_EQ(decoded->encoded_bytes(), bytes.size());
  expect(decoded->root());

  // encode_struct copies a lone struct into a message of its own: the same bytes come back.
  Result<wire::Decoded<T>> copied = wire::decode<T>(wire::encode_struct(root.asReader()));
  ASSERT_TRUE(copied.ok()) << name << ": " << copied.status().to_string();
  expect(copied->root());
}

#define DICE_ROUND_TRIP(Type, fill_fn, expect_fn)                                     \
  expect_round_trip<schema::Type>([](schema::Type::Builder b) { fill_fn(b, kSalt); }, \
                                  [](schema::Type::Reader r) { expect_fn(r, kSalt); })

TEST(SchemaRoundTrip, TaskAndRollout) {
  DICE_ROUND_TRIP(Task, fill_task, expect_task);
  DICE_ROUND_TRIP(SamplingParams, fill_sampling_params, expect_sampling_params);
  DICE_ROUND_TRIP(RolloutRequest, fill_rollout_request, expect_rollout_request);
  DICE_ROUND_TRIP(Candidate, fill_candidate, expect_candidate);
}

TEST(SchemaRoundTrip, Verdict) {
  DICE_ROUND_TRIP(EvalRequest, fill_eval_request, expect_eval_request);
  DICE_ROUND_TRIP(Verdict, fill_verdict, expect_verdict);
  DICE_ROUND_TRIP(Finding, fill_finding, expect_finding);
  DICE_ROUND_TRIP(Timings, fill_timings, expect_timings);
}

TEST(SchemaRoundTrip, Control) {
  DICE_ROUND_TRIP(Hello, fill_hello, expect_hello);
  DICE_ROUND_TRIP(Heartbeat, fill_heartbeat, expect_heartbeat);
  DICE_ROUND_TRIP(Credit, fill_credit, expect_credit);
  DICE_ROUND_TRIP(Ack, fill_ack, expect_ack);
  DICE_ROUND_TRIP(Shutdown, fill_shutdown, expect_shutdown);
  DICE_ROUND_TRIP(Error, fill_error, expect_error);
  DICE_ROUND_TRIP(Cancel, fill_cancel, expect_cancel);
}

TEST(SchemaRoundTrip, WeightsUpdateBothUnionArms) {
  for (bool nccl : {false, true}) {
    SCOPED_TRACE(nccl ? "nccl" : "checkpointDir");
    expect_round_trip<schema::WeightsUpdate>(
        [nccl](schema::WeightsUpdate::Builder b) { fill_weights_update(b, kSalt, nccl); },
        [nccl](schema::WeightsUpdate::Reader r) { expect_weights_update(r, kSalt, nccl); });
  }
}

TEST(SchemaRoundTrip, RewardLogRecords) {
  DICE_ROUND_TRIP(RunRecord, fill_run_record, expect_run_record);
  DICE_ROUND_TRIP(StepRecord, fill_step_record, expect_step_record);
  DICE_ROUND_TRIP(CandidateRecord, fill_candidate_record, expect_candidate_record);
  DICE_ROUND_TRIP(KernelRecord, fill_kernel_record, expect_kernel_record);
  DICE_ROUND_TRIP(MetricRecord, fill_metric_record, expect_metric_record);
  DICE_ROUND_TRIP(TaskRecord, fill_task_record, expect_task_record);
}

// One run per Envelope body arm; the schema's arm count is checked so a new arm needs a fixture.
class EnvelopeArmRoundTrip : public ::testing::TestWithParam<int> {};

TEST_P(EnvelopeArmRoundTrip, EveryFieldSurvives) {
  const auto which = static_cast<schema::Envelope::Body::Which>(GetParam());
  expect_round_trip<schema::Envelope>(
      [which](schema::Envelope::Builder b) { fill_envelope(b, kSalt, which); },
      [which](schema::Envelope::Reader r) { expect_envelope(r, kSalt, which); });
}

constexpr int kEnvelopeArms = 12;
INSTANTIATE_TEST_SUITE_P(AllArms, EnvelopeArmRoundTrip, ::testing::Range(0, kEnvelopeArms));

TEST(SchemaRoundTrip, FixturesCoverEveryEnvelopeArm) {
  auto body = capnp::Schema::from<schema::Envelope::Body>();
  EXPECT_EQ(body.getUnionFields().size(), static_cast<unsigned>(kEnvelopeArms));
}

TEST(SchemaRoundTrip, FixtureChecksNoticeWrongValues) {
  // Guards the fixtures themselves: an expect_*() that passed anything would make the tests above
  // meaningless.
  capnp::MallocMessageBuilder message;
  fill_credit(message.initRoot<schema::Credit>(), 1);
  auto credit = message.getRoot<schema::Credit>().asReader();
  expect_credit(credit, 1);
  capnp::MallocMessageBuilder other;
  auto wrong = other.initRoot<schema::Credit>();
  fill_credit(wrong, 1);
  wrong.setCredits(wrong.getCredits() + 1);
  EXPECT_NONFATAL_FAILURE(expect_credit(wrong.asReader(), 1), "r.getCredits()");

  capnp::MallocMessageBuilder defaults;
  auto shutdown = defaults.initRoot<schema::Shutdown>();
  shutdown.setReason("set");  // `drain` stays false, its default
  EXPECT_NONFATAL_FAILURE(
      expect_no_default_fields(capnp::toDynamic(shutdown.asReader()), "Shutdown"),
      "Shutdown.drain holds its default");
}

}  // namespace
}  // namespace dice::test
