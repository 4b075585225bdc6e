#include "common/wire/wire.h"

#include <capnp/serialize.h>
#include <kj/exception.h>
#include <kj/io.h>

#include <cstring>
#include <exception>
#include <limits>

#include "common/wire/schema_walk.h"

namespace dice::wire {
namespace {

constexpr std::size_t kWordBytes = sizeof(capnp::word);

std::uint32_t read_u32_le(const unsigned char* p) {
  return static_cast<std::uint32_t>(p[0]) | (static_cast<std::uint32_t>(p[1]) << 8) |
         (static_cast<std::uint32_t>(p[2]) << 16) | (static_cast<std::uint32_t>(p[3]) << 24);
}

// Checks the segment table against the buffer: the only part of the framing Cap'n Proto's
// FlatArrayMessageReader would otherwise trust or reject with an exception.
Status check_segment_table(std::string_view bytes, const DecodeOptions& options) {
  const std::size_t size = bytes.size();
  if (size > options.max_message_bytes) {
    return Status::corruption("message of " + std::to_string(size) +
                              " bytes exceeds the limit of " +
                              std::to_string(options.max_message_bytes));
  }
  if (size < kWordBytes) {
    return Status::corruption("truncated message: " + std::to_string(size) +
                              " bytes, the segment table needs at least 8");
  }
  if (size % kWordBytes != 0) {
    return Status::corruption("message size " + std::to_string(size) +
                              " bytes is not a multiple of 8 (truncated or trailing bytes)");
  }
  const auto* data = reinterpret_cast<const unsigned char*>(bytes.data());
  const std::uint64_t segments = std::uint64_t{read_u32_le(data)} + 1;
  if (segments > options.max_segments) {
    return Status::corruption("segment table claims " + std::to_string(segments) +
                              " segments, more than the limit of " +
                              std::to_string(options.max_segments));
  }
  // One u32 for the count, one per segment, padded to a whole word.
  const std::uint64_t header_bytes =
      ((segments + 1) * 4 + kWordBytes - 1) / kWordBytes * kWordBytes;
  if (size < header_bytes) {
    return Status::corruption("truncated message: " + std::to_string(size) +
                              " bytes, the table of " + std::to_string(segments) +
                              " segments needs " + std::to_string(header_bytes));
  }
  std::uint64_t body_words = 0;
  for (std::uint64_t i = 0; i < segments; ++i) {
    body_words += read_u32_le(data + 4 * (i + 1));  // at most 512 * 2^32: no overflow
  }
  if (segments == 1 && body_words == 0) {
    return Status::corruption("message has a single empty segment: no root pointer");
  }
  const std::uint64_t expected = header_bytes + body_words * kWordBytes;
  if (expected != size) {
    return Status::corruption(
        std::string(expected > size ? "truncated message" : "trailing bytes after message") +
        ": segment table describes " + std::to_string(expected) + " bytes, buffer has " +
        std::to_string(size));
  }
  return Status::ok_status();
}

// Cap'n Proto's descriptions quote the offending bytes, NULs and control characters included.
std::string printable(kj::StringPtr text) {
  static const char kHex[] = "0123456789abcdef";
  std::string out;
  for (char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if (u >= 0x20 && u < 0x7f) {
      out += c;
    } else {
      out += "\\x";
      out += kHex[u >> 4];
      out += kHex[u & 0xf];
    }
  }
  return out;
}

}  // namespace

std::string encode(capnp::MessageBuilder& message) {
  const std::size_t words = capnp::computeSerializedSizeInWords(message);
  std::string out(words * kWordBytes, '\0');
  kj::ArrayOutputStream stream(kj::arrayPtr(reinterpret_cast<kj::byte*>(out.data()), out.size()));
  capnp::writeMessage(stream, message);
  return out;
}

// The message's words (an aligned copy, or the owner of words read in place) and the reader over
// them, kept together at a stable address.
struct DecodedMessage::Storage {
  Storage(kj::Array<capnp::word> copy, std::shared_ptr<const void> owner,
          kj::ArrayPtr<const capnp::word> words, const capnp::ReaderOptions& options)
      : copy(std::move(copy)), owner(std::move(owner)), reader(words, options) {}
  kj::Array<capnp::word> copy;
  std::shared_ptr<const void> owner;
  capnp::FlatArrayMessageReader reader;
};

DecodedMessage::DecodedMessage(std::unique_ptr<Storage> storage, capnp::MessageReader* reader,
                               capnp::StructSchema schema, std::size_t encoded_bytes)
    : storage_(std::move(storage)),
      reader_(reader),
      schema_(schema),
      encoded_bytes_(encoded_bytes) {}

DecodedMessage::DecodedMessage(DecodedMessage&&) noexcept = default;
DecodedMessage& DecodedMessage::operator=(DecodedMessage&&) noexcept = default;
DecodedMessage::~DecodedMessage() = default;

Result<DecodedMessage> decode_message(std::string_view bytes, capnp::StructSchema schema,
                                      const DecodeOptions& options) {
  return decode_message(bytes, nullptr, schema, options);
}

Result<DecodedMessage> decode_message(std::string_view bytes, std::shared_ptr<const void> owner,
                                      capnp::StructSchema schema, const DecodeOptions& options) {
  DICE_RETURN_IF_ERROR(check_segment_table(bytes, options));

  // Input from a socket or a database has no alignment guarantee; Cap'n Proto needs 8 bytes.
  kj::Array<capnp::word> copy;
  kj::ArrayPtr<const capnp::word> words;
  if (owner != nullptr &&
      reinterpret_cast<std::uintptr_t>(bytes.data()) % alignof(capnp::word) == 0) {
    words =
        kj::arrayPtr(reinterpret_cast<const capnp::word*>(bytes.data()), bytes.size() / kWordBytes);
  } else {
    owner = nullptr;
    copy = kj::heapArray<capnp::word>(bytes.size() / kWordBytes);
    std::memcpy(copy.begin(), bytes.data(), bytes.size());
    words = copy.asPtr();
  }

  try {
    // Walk with the caller's limits: this is where every bound, type and limit check happens.
    capnp::ReaderOptions walk_options;
    walk_options.traversalLimitInWords = options.traversal_limit_words;
    walk_options.nestingLimit = options.nesting_limit;
    capnp::FlatArrayMessageReader walk_reader(words, walk_options);
    walk_validate(walk_reader.getRoot<capnp::AnyStruct>(), schema);

    // The kept reader has no traversal budget to run out of: the walk above already proved that
    // one full read fits the limit, and a budget spent by the walk must not make later reads throw.
    // The nesting limit is structural, so the same value passes the same message.
    capnp::ReaderOptions keep_options;
    keep_options.traversalLimitInWords = std::numeric_limits<std::uint64_t>::max();
    keep_options.nestingLimit = options.nesting_limit;
    auto storage = std::make_unique<DecodedMessage::Storage>(std::move(copy), std::move(owner),
                                                             words, keep_options);
    capnp::MessageReader* reader = &storage->reader;
    return DecodedMessage(std::move(storage), reader, schema, bytes.size());
  } catch (const kj::Exception& e) {
    return Status::corruption("malformed " + std::string(schema.getShortDisplayName().cStr()) +
                              " message (" + std::to_string(bytes.size()) +
                              " bytes): " + printable(e.getDescription()));
  } catch (const std::exception& e) {
    return Status::internal("decoding " + std::string(schema.getShortDisplayName().cStr()) + ": " +
                            e.what());
  }
}

}  // namespace dice::wire
