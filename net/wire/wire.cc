#include "net/wire/wire.h"

#include <capnp/serialize.h>
#include <kj/exception.h>

#include <cstring>
#include <exception>
#include <limits>
#include <new>

#include "net/wire/schema_walk.h"

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

// Hands encode()'s bytes, in order, to `write(const char* bytes, std::size_t size)`.
template <typename Write>
void write_message(kj::ArrayPtr<const kj::ArrayPtr<const capnp::word>> segments, Write&& write) {
  auto write_u32_le = [&](std::uint32_t value) {
    const char bytes[4] = {static_cast<char>(value), static_cast<char>(value >> 8),
                           static_cast<char>(value >> 16), static_cast<char>(value >> 24)};
    write(bytes, sizeof(bytes));
  };
  write_u32_le(static_cast<std::uint32_t>(segments.size() - 1));
  for (auto segment : segments) write_u32_le(static_cast<std::uint32_t>(segment.size()));
  if (segments.size() % 2 == 0) write_u32_le(0);  // pad the table to a whole word
  for (auto segment : segments) {
    write(reinterpret_cast<const char*>(segment.begin()), segment.size() * kWordBytes);
  }
}

std::size_t encoded_words(kj::ArrayPtr<const kj::ArrayPtr<const capnp::word>> segments) {
  std::size_t words = (segments.size() + 2) / 2;  // the table: a u32 per segment and the count
  for (auto segment : segments) words += segment.size();
  return words;
}

}  // namespace

std::string encode(capnp::MessageBuilder& message) {
  const auto segments = message.getSegmentsForOutput();
  // Appended, not written into a zero-filled string: a large message is not touched twice.
  std::string out;
  out.reserve(encoded_words(segments) * kWordBytes);
  write_message(segments, [&](const char* bytes, std::size_t size) { out.append(bytes, size); });
  return out;
}

std::size_t encoded_size(capnp::MessageBuilder& message) {
  return encoded_words(message.getSegmentsForOutput()) * kWordBytes;
}

void encode_to(capnp::MessageBuilder& message, char* out) {
  write_message(message.getSegmentsForOutput(), [&](const char* bytes, std::size_t size) {
    std::memcpy(out, bytes, size);
    out += size;
  });
}

// The reader over the message's words, and what keeps those words alive: the owner of bytes read
// in place, or (when the bytes were copied) the aligned copy placed right behind this struct in
// the same allocation. One allocation per decoded message.
struct DecodedMessage::Storage {
  Storage(std::shared_ptr<const void> owner, kj::ArrayPtr<const capnp::word> words,
          const capnp::ReaderOptions& options)
      : owner(std::move(owner)), reader(words, options) {}
  std::shared_ptr<const void> owner;
  capnp::FlatArrayMessageReader reader;
};
void DecodedMessage::StorageDeleter::operator()(Storage* storage) const noexcept {
  storage->~Storage();
  ::operator delete(static_cast<void*>(storage));
}

DecodedMessage::DecodedMessage(StoragePtr storage, capnp::StructSchema schema,
                               std::size_t encoded_bytes)
    : storage_(std::move(storage)),
      reader_(&storage_->reader),
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
  // Unaligned bytes are copied behind the reader, in the one allocation the result needs anyway.
  const bool in_place = owner != nullptr &&
                        reinterpret_cast<std::uintptr_t>(bytes.data()) % alignof(capnp::word) == 0;
  if (!in_place) owner = nullptr;
  static_assert(sizeof(DecodedMessage::Storage) % sizeof(capnp::word) == 0,
                "the aligned copy behind Storage must start on a word boundary");
  struct Block {  // raw memory until the Storage in it is constructed
    void* memory;
    ~Block() { ::operator delete(memory); }
  } block{::operator new(sizeof(DecodedMessage::Storage) + (in_place ? 0 : bytes.size()))};
  kj::ArrayPtr<const capnp::word> words;
  if (in_place) {
    words =
        kj::arrayPtr(reinterpret_cast<const capnp::word*>(bytes.data()), bytes.size() / kWordBytes);
  } else {
    auto* copy = reinterpret_cast<capnp::word*>(static_cast<char*>(block.memory) +
                                                sizeof(DecodedMessage::Storage));
    std::memcpy(copy, bytes.data(), bytes.size());
    words = kj::arrayPtr(copy, bytes.size() / kWordBytes);
  }

  try {
    const StructPlan* plan = plan_for(schema);
    // The kept reader has no traversal limit of its own: the walk below charges the caller's
    // budget itself, so the budget it spends cannot make later reads throw. The nesting limit is
    // structural, so the same value passes the same message every time.
    capnp::ReaderOptions keep_options;
    keep_options.traversalLimitInWords = std::numeric_limits<std::uint64_t>::max();
    keep_options.nestingLimit = options.nesting_limit;
    const bool bounded_reader = reaches_any_pointer(plan);
    if (bounded_reader) {
      // An AnyPointer is checked by Cap'n Proto's targetSize(), which only a reader's own limiter
      // bounds: validate with a second, bounded reader (dice's schemas never take this path).
      capnp::ReaderOptions walk_options;
      walk_options.traversalLimitInWords = options.traversal_limit_words;
      walk_options.nestingLimit = options.nesting_limit;
      capnp::FlatArrayMessageReader walk_reader(words, walk_options);
      walk_validate(walk_reader.getRoot<capnp::AnyStruct>(), plan,
                    std::numeric_limits<std::uint64_t>::max());
    }
    DecodedMessage::StoragePtr storage(
        new (block.memory) DecodedMessage::Storage(std::move(owner), words, keep_options));
    block.memory = nullptr;  // owned by `storage` from here
    if (!bounded_reader) {
      walk_validate(storage->reader.getRoot<capnp::AnyStruct>(), plan,
                    options.traversal_limit_words);
    }
    return DecodedMessage(std::move(storage), schema, bytes.size());
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
