// A step's internal errors in its StepRecord: written, encoded, decoded and read back; a record
// from before the fields reads "not measured"; the alert's threshold.
#include "rewardlog/step_internal_errors.h"

#include <capnp/message.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "rewardlog/record_codec.h"

namespace dice::rewardlog {
namespace {

TEST(StepInternalErrorsTest, CountAndShareRoundTripThroughTheEncodedRecord) {
  capnp::MallocMessageBuilder message;
  auto step = message.initRoot<schema::StepRecord>();
  step.setRunId("run");
  step.setStep(12);
  step.setNumCandidates(1024);
  set_step_internal_errors({21, 21.0 / 1024.0}, step);
  auto encoded = encode_record(step.asReader());
  ASSERT_TRUE(encoded.ok()) << encoded.status().to_string();
  auto decoded = decode_record<schema::StepRecord>(encoded->key, encoded->value);
  ASSERT_TRUE(decoded.ok()) << decoded.status().to_string();
  const StepInternalErrors back = step_internal_errors(decoded->get());
  EXPECT_EQ(back.count, 21u);
  EXPECT_FLOAT_EQ(static_cast<float>(back.share), 21.0f / 1024.0f);
  EXPECT_TRUE(internal_error_alert(back.share));
  EXPECT_EQ(decoded->get().getStep(), 12u);
}

// Written before the fields (nothing set): no count and a share that was not measured, which
// raises no alert.
TEST(StepInternalErrorsTest, AnOlderRecordReadsAsNotMeasured) {
  capnp::MallocMessageBuilder message;
  auto step = message.initRoot<schema::StepRecord>();
  step.setRunId("old");
  step.setNumCandidates(64);
  auto encoded = encode_record(step.asReader());
  ASSERT_TRUE(encoded.ok());
  auto decoded = decode_record<schema::StepRecord>(encoded->key, encoded->value);
  ASSERT_TRUE(decoded.ok());
  const StepInternalErrors back = step_internal_errors(decoded->get());
  EXPECT_EQ(back.count, 0u);
  EXPECT_TRUE(std::isnan(back.share));
  EXPECT_FALSE(internal_error_alert(back.share));
}

TEST(StepInternalErrorsTest, TheAlertIsAboveTwoPercent) {
  EXPECT_DOUBLE_EQ(kInternalErrorAlertShare, 0.02);
  EXPECT_FALSE(internal_error_alert(0.0));
  EXPECT_FALSE(internal_error_alert(0.02));  // 20 of 1,000: at the threshold, not above
  EXPECT_TRUE(internal_error_alert(21.0 / 1000.0));
  EXPECT_TRUE(internal_error_alert(1.0));
  EXPECT_FALSE(internal_error_alert(std::numeric_limits<double>::quiet_NaN()));
}

}  // namespace
}  // namespace dice::rewardlog
