// Envelope helpers: header stamping, protocol version check, body names.
#include "net/wire/envelope.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

#include "tests/schemas/schema_fixtures.h"

namespace dice::test {
namespace {

using schema::Envelope;

TEST(Envelope, InitStampsHeader) {
  capnp::MallocMessageBuilder message;
  const std::int64_t before = wire::unix_millis_now();
  auto envelope = wire::init_envelope(message, "node1/reward/0", "run-7");
  envelope.getBody().initAck().setWorkId(12);
  const std::int64_t after = wire::unix_millis_now();

  auto decoded = wire::decode_envelope(wire::encode(message));
  ASSERT_TRUE(decoded.ok()) << decoded.status().to_string();
  auto root = decoded->root();
  EXPECT_EQ(root.getProtocolVersion(), schema::PROTOCOL_VERSION);
  EXPECT_EQ(std::string(root.getSenderId().cStr()), "node1/reward/0");
  EXPECT_EQ(std::string(root.getRunId().cStr()), "run-7");
  EXPECT_GE(root.getSentUnixMillis(), before);
  EXPECT_LE(root.getSentUnixMillis(), after);
  ASSERT_EQ(root.getBody().which(), Envelope::Body::ACK);
  EXPECT_EQ(root.getBody().getAck().getWorkId(), 12u);
}

TEST(Envelope, OtherProtocolVersionIsRejectedByName) {
  capnp::MallocMessageBuilder message;
  auto envelope = wire::init_envelope(message, "old-worker", "run");
  envelope.setProtocolVersion(schema::PROTOCOL_VERSION + 1);
  envelope.getBody().initAck();
  auto decoded = wire::decode_envelope(wire::encode(message));
  ASSERT_FALSE(decoded.ok());
  EXPECT_EQ(decoded.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(decoded.status().message().find("old-worker"), std::string::npos);
  EXPECT_NE(decoded.status().message().find("protocol version"), std::string::npos);
}

TEST(Envelope, GarbageIsCorruptionWithContext) {
  auto decoded = wire::decode_envelope(std::string(24, '\x5a'));
  ASSERT_FALSE(decoded.ok());
  EXPECT_EQ(decoded.status().code(), StatusCode::kCorruption);
  EXPECT_EQ(decoded.status().message().rfind("envelope: ", 0), 0u) << decoded.status().message();
}

TEST(Envelope, BodyNamesAreDistinctAndMatchTheSchema) {
  auto body = capnp::Schema::from<Envelope::Body>();
  std::set<std::string> names;
  for (auto field : body.getUnionFields()) {
    const auto which = static_cast<Envelope::Body::Which>(field.getProto().getDiscriminantValue());
    EXPECT_EQ(std::string(wire::body_name(which)), field.getProto().getName().cStr());
    names.insert(wire::body_name(which));
  }
  EXPECT_EQ(names.size(), body.getUnionFields().size());
  EXPECT_STREQ(wire::body_name(static_cast<Envelope::Body::Which>(999)), "unknown");
}

TEST(Envelope, EveryArmDecodesThroughDecodeEnvelope) {
  for (int arm = 0; arm < 12; ++arm) {
    const auto which = static_cast<Envelope::Body::Which>(arm);
    capnp::MallocMessageBuilder message;
    fill_envelope(message.initRoot<Envelope>(), 5, which);
    auto decoded = wire::decode_envelope(wire::encode(message));
    ASSERT_TRUE(decoded.ok()) << wire::body_name(which) << ": " << decoded.status().to_string();
    expect_envelope(decoded->root(), 5, which);
  }
}

}  // namespace
}  // namespace dice::test
