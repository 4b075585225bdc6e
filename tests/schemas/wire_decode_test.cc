// decode() on hostile bytes: truncation, trailing bytes, misalignment, garbage, bit flips and
// limits all end in a Status (Corruption), never a crash or an exception on later field access.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>

#include "net/wire/wire.h"
#include "tests/schemas/schema_fixtures.h"

namespace dice::test {
namespace {

using schema::Envelope;

std::string envelope_bytes(Envelope::Body::Which which, std::uint32_t salt = 7) {
  capnp::MallocMessageBuilder message;
  fill_envelope(message.initRoot<Envelope>(), salt, which);
  return wire::encode(message);
}

// The same EvalRequest envelope spread over many small segments (a far-pointer-heavy layout).
std::string multi_segment_envelope_bytes() {
  capnp::MallocMessageBuilder message(1, capnp::AllocationStrategy::FIXED_SIZE);
  fill_envelope(message.initRoot<Envelope>(), 7, Envelope::Body::EVAL_REQUEST);
  EXPECT_GT(message.getSegmentsForOutput().size(), 10u);
  return wire::encode(message);
}

// Reads every field of a decoded message; the point of validation is that this cannot throw.
void read_everything(const wire::Decoded<Envelope>& decoded) {
  EXPECT_NO_THROW({
    auto text = decoded.root().toString().flatten();
    EXPECT_GT(text.size(), 0u);
  });
}

// Decodes `bytes`; either it works and every field reads, or it is Corruption.
// Returns whether it decoded.
bool decode_never_crashes(const std::string& bytes) {
  Result<wire::Decoded<Envelope>> decoded = wire::decode<Envelope>(bytes);
  if (!decoded.ok()) {
    EXPECT_EQ(decoded.status().code(), StatusCode::kCorruption) << decoded.status().to_string();
    EXPECT_FALSE(decoded.status().message().empty());
    return false;
  }
  read_everything(*decoded);
  return true;
}

TEST(WireDecode, EveryTruncationIsCorruption) {
  for (const std::string& bytes :
       {envelope_bytes(Envelope::Body::EVAL_REQUEST), multi_segment_envelope_bytes()}) {
    ASSERT_TRUE(wire::decode<Envelope>(bytes).ok());
    for (std::size_t n = 0; n < bytes.size(); ++n) {
      Result<wire::Decoded<Envelope>> decoded = wire::decode<Envelope>(bytes.substr(0, n));
      ASSERT_FALSE(decoded.ok()) << "prefix of " << n << " bytes decoded";
      EXPECT_EQ(decoded.status().code(), StatusCode::kCorruption);
    }
  }
}

TEST(WireDecode, TruncationMessageSaysWhy) {
  const std::string bytes = envelope_bytes(Envelope::Body::HELLO);
  auto decoded = wire::decode<Envelope>(bytes.substr(0, bytes.size() - 8));
  ASSERT_FALSE(decoded.ok());
  EXPECT_NE(decoded.status().message().find("truncated"), std::string::npos)
      << decoded.status().message();
  EXPECT_NE(decoded.status().message().find(std::to_string(bytes.size())), std::string::npos)
      << decoded.status().message();
}

TEST(WireDecode, TrailingBytesAreCorruption) {
  const std::string bytes = envelope_bytes(Envelope::Body::CREDIT);
  for (const std::string& extra : {std::string(8, '\0'), std::string(3, 'x')}) {
    auto decoded = wire::decode<Envelope>(bytes + extra);
    ASSERT_FALSE(decoded.ok());
    EXPECT_EQ(decoded.status().code(), StatusCode::kCorruption);
  }
}

TEST(WireDecode, MultiSegmentMessageRoundTrips) {
  auto decoded = wire::decode<Envelope>(multi_segment_envelope_bytes());
  ASSERT_TRUE(decoded.ok()) << decoded.status().to_string();
  expect_envelope(decoded->root(), 7, Envelope::Body::EVAL_REQUEST);
}

TEST(WireDecode, AnyInputAlignmentWorks) {
  const std::string bytes = envelope_bytes(Envelope::Body::VERDICT);
  std::string buffer(bytes.size() + 16, '\0');
  for (std::size_t offset = 0; offset < 8; ++offset) {
    std::memcpy(&buffer[offset], bytes.data(), bytes.size());
    auto decoded = wire::decode<Envelope>(std::string_view(&buffer[offset], bytes.size()));
    ASSERT_TRUE(decoded.ok()) << "offset " << offset << ": " << decoded.status().to_string();
    expect_envelope(decoded->root(), 7, Envelope::Body::VERDICT);
  }
}

TEST(WireDecode, DecodedMessageOutlivesItsInput) {
  std::string bytes = envelope_bytes(Envelope::Body::SHUTDOWN);
  auto decoded = wire::decode<Envelope>(bytes);
  ASSERT_TRUE(decoded.ok());
  bytes.assign(bytes.size(), '\xAA');  // the caller's buffer is reused
  wire::Decoded<Envelope> moved = std::move(decoded).value();
  expect_envelope(moved.root(), 7, Envelope::Body::SHUTDOWN);
}

TEST(WireDecode, RandomGarbageNeverCrashes) {
  std::mt19937_64 rng(20261129);
  int decoded = 0;
  for (int i = 0; i < 5000; ++i) {
    std::string bytes(rng() % 600, '\0');
    for (char& c : bytes) c = static_cast<char>(rng());
    decoded += decode_never_crashes(bytes);
  }
  // A random segment table almost never matches the buffer size; those end before the walk.
  EXPECT_LT(decoded, 50);
}

TEST(WireDecode, GarbageBehindValidSegmentTableNeverCrashes) {
  // A correct one-segment table over random words gets past the framing checks, so this
  // exercises the schema walk on random pointers.
  std::mt19937_64 rng(7);
  int decoded = 0, rejected = 0;
  for (int i = 0; i < 5000; ++i) {
    const std::uint32_t words = 1 + rng() % 64;
    std::string bytes(8 + 8 * words, '\0');
    const std::uint32_t header[2] = {0, words};
    std::memcpy(bytes.data(), header, sizeof(header));
    for (std::size_t j = 8; j < bytes.size(); ++j) bytes[j] = static_cast<char>(rng());
    // Most roots are a plausible struct pointer (offset 0, small sections inside the segment),
    // so the walk goes on to random field pointers instead of stopping at the root.
    if (i % 4 != 0 && words > 1) {
      const std::uint64_t body = words - 1;
      const std::uint64_t data_words = rng() % (body + 1);
      const std::uint64_t pointers = rng() % (body - data_words + 1);
      const std::uint64_t root = (data_words << 32) | (pointers << 48);  // kind 0, offset 0
      std::memcpy(&bytes[8], &root, sizeof(root));
    }
    if (decode_never_crashes(bytes)) {
      ++decoded;
    } else {
      ++rejected;
    }
  }
  EXPECT_GT(decoded, 0);  // both outcomes were exercised
  EXPECT_GT(rejected, 0);
}

TEST(WireDecode, EveryBitFlipDecodesOrIsCorruption) {
  for (const std::string& original :
       {envelope_bytes(Envelope::Body::EVAL_REQUEST), multi_segment_envelope_bytes()}) {
    int decoded = 0, rejected = 0;
    for (std::size_t bit = 0; bit < original.size() * 8; ++bit) {
      std::string bytes = original;
      bytes[bit / 8] = static_cast<char>(bytes[bit / 8] ^ (1 << (bit % 8)));
      if (decode_never_crashes(bytes)) {
        ++decoded;
      } else {
        ++rejected;
      }
    }
    EXPECT_GT(decoded, 0);   // flips in text and numbers still decode
    EXPECT_GT(rejected, 0);  // flips in the table and pointers do not
  }
}

TEST(WireDecode, RandomMultiByteDamageNeverCrashes) {
  const std::string original = envelope_bytes(Envelope::Body::WEIGHTS_UPDATE);
  std::mt19937_64 rng(99);
  for (int i = 0; i < 5000; ++i) {
    std::string bytes = original;
    const int damage = 1 + rng() % 8;
    for (int d = 0; d < damage; ++d)
      bytes[8 + rng() % (bytes.size() - 8)] = static_cast<char>(rng());
    decode_never_crashes(bytes);
  }
}

TEST(WireDecode, TextWithoutNulTerminatorIsCorruption) {
  capnp::MallocMessageBuilder message;
  message.initRoot<schema::Task>().setId("abcdefg");  // 7 chars + NUL fill one word exactly
  std::string bytes = wire::encode(message);
  const std::size_t at = bytes.find(std::string("abcdefg\0", 8));
  ASSERT_NE(at, std::string::npos);
  bytes[at + 7] = 'h';
  auto decoded = wire::decode<schema::Task>(bytes);
  ASSERT_FALSE(decoded.ok());
  EXPECT_EQ(decoded.status().code(), StatusCode::kCorruption);
  EXPECT_NE(decoded.status().message().find("NUL"), std::string::npos)
      << decoded.status().message();
  EXPECT_NE(decoded.status().message().find("Task"), std::string::npos)
      << decoded.status().message();
}

TEST(WireDecode, PointerOfTheWrongKindIsCaughtAtDecodeTime) {
  // An EvalRequest's first pointer is a struct (task); a Task's first pointer is text (id).
  capnp::MallocMessageBuilder message;
  fill_eval_request(message.initRoot<schema::EvalRequest>(), 3);
  const std::string bytes = wire::encode(message);
  ASSERT_TRUE(wire::decode<schema::EvalRequest>(bytes).ok());
  auto as_task = wire::decode<schema::Task>(bytes);
  ASSERT_FALSE(as_task.ok());
  EXPECT_EQ(as_task.status().code(), StatusCode::kCorruption);
}

TEST(WireDecode, LimitsAreEnforced) {
  const std::string bytes = envelope_bytes(Envelope::Body::EVAL_REQUEST);
  {
    wire::DecodeOptions options;
    options.max_message_bytes = bytes.size() - 8;
    EXPECT_FALSE(wire::decode<Envelope>(bytes, options).ok());
    options.max_message_bytes = bytes.size();
    EXPECT_TRUE(wire::decode<Envelope>(bytes, options).ok());
  }
  {
    // Envelope -> body -> evalRequest -> candidate -> lists: more than 2 levels deep.
    wire::DecodeOptions options;
    options.nesting_limit = 2;
    auto decoded = wire::decode<Envelope>(bytes, options);
    ASSERT_FALSE(decoded.ok());
    EXPECT_EQ(decoded.status().code(), StatusCode::kCorruption);
  }
  {
    const std::string many = multi_segment_envelope_bytes();
    wire::DecodeOptions options;
    options.max_segments = 4;
    auto decoded = wire::decode<Envelope>(many, options);
    ASSERT_FALSE(decoded.ok());
    EXPECT_NE(decoded.status().message().find("segments"), std::string::npos);
  }
}

TEST(WireDecode, TraversalBudgetIsSpentByValidationNotByLaterReads) {
  const std::string bytes = envelope_bytes(Envelope::Body::EVAL_REQUEST);
  // Find the smallest traversal budget that still decodes.
  std::uint64_t lo = 1, hi = bytes.size();  // a full walk never reads more words than bytes
  wire::DecodeOptions options;
  options.traversal_limit_words = hi;
  ASSERT_TRUE(wire::decode<Envelope>(bytes, options).ok());
  while (lo < hi) {
    options.traversal_limit_words = (lo + hi) / 2;
    if (wire::decode<Envelope>(bytes, options).ok()) {
      hi = options.traversal_limit_words;
    } else {
      lo = options.traversal_limit_words + 1;
    }
  }
  options.traversal_limit_words = lo - 1;
  auto too_small = wire::decode<Envelope>(bytes, options);
  ASSERT_FALSE(too_small.ok());
  EXPECT_NE(too_small.status().message().find("traversal"), std::string::npos)
      << too_small.status().message();

  // With the tightest budget, the decoded message can still be read in full, several times.
  options.traversal_limit_words = lo;
  auto decoded = wire::decode<Envelope>(bytes, options);
  ASSERT_TRUE(decoded.ok());
  for (int i = 0; i < 3; ++i) {
    read_everything(*decoded);
    expect_envelope(decoded->root(), 7, Envelope::Body::EVAL_REQUEST);
  }
}

// A struct list may claim hundreds of millions of zero-sized elements in a few bytes; the walk
// visits each one, so each one spends the traversal budget (Cap'n Proto's own reader charges them
// the same way) and the message is refused instead of walked.
TEST(WireDecode, ZeroSizedListElementsSpendTheTraversalBudget) {
  capnp::MallocMessageBuilder message;
  auto verdict = message.initRoot<Envelope>().getBody().initVerdict();
  const auto findings = capnp::Schema::from<schema::Verdict>().getFieldByName("findings");
  const std::uint32_t slot = findings.getProto().getSlot().getOffset();
  capnp::toAny(verdict).getPointerSection()[slot].initAsListOfAnyStruct(0, 0, 1u << 28);
  const std::string bytes = wire::encode(message);
  EXPECT_LT(bytes.size(), 1024u);
  auto decoded = wire::decode<Envelope>(bytes);
  ASSERT_FALSE(decoded.ok());
  EXPECT_EQ(decoded.status().code(), StatusCode::kCorruption);
  EXPECT_NE(decoded.status().message().find("traversal"), std::string::npos)
      << decoded.status().message();
}

}  // namespace
}  // namespace dice::test
