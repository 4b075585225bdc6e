// Cap'n Proto messages as bytes: encode a message to one contiguous buffer, decode bytes from the
// network or disk into a validated, read-only message.
//
// Wire format: Cap'n Proto's standard (unpacked) stream framing, all in one buffer:
//
//   +--------------+--------------+-----+--------------+---------+-----------+-----+-----------+
//   | u32 LE:      | u32 LE: size | ... | u32 LE: size | pad to  | segment 0 | ... | segment   |
//   | segments - 1 | of seg 0 in  |     | of seg N-1   | 8 bytes | words     |     | N-1 words |
//   |              | 8-byte words |     |              | (if odd)|           |     |           |
//   +--------------+--------------+-----+--------------+---------+-----------+-----+-----------+
//
// The buffer must be exactly header + segments long: a short buffer is truncated, a long one has
// trailing garbage; both are Corruption.
//
// Decoding never throws and never crashes, whatever the bytes: the segment table is checked
// against the buffer size, unaligned bytes are copied into 8-byte-aligned words (so any input
// alignment works; aligned bytes with an owner are read in place), and the whole message is walked
// once against the root's schema inside a try block, by the same reader the result keeps (the walk
// counts the traversal budget itself: see schema_walk.h). Cap'n Proto checks pointers lazily, on
// field access; after that walk every field the schema knows has been read once, so later reads of
// a Decoded<T> cannot throw (reading the inactive arm of a union is a caller bug, as it is with any
// Cap'n Proto reader: check which() first).
#pragma once

#include <capnp/message.h>
#include <capnp/schema.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

#include "common/status.h"

namespace dice::wire {

// Limits applied while decoding untrusted bytes.
struct DecodeOptions {
  // Largest encoded message accepted, in bytes. Default: 64 MiB
  std::size_t max_message_bytes = std::size_t{64} << 20;
  // Most segments in the segment table (Cap'n Proto's own reader stops at 512). Default: 512
  std::uint32_t max_segments = 512;
  // 8-byte words the validation walk may read, counting every re-read of a shared subtree; stops
  // "amplification" messages whose pointers all point at one big object. Default: 8 Mi words
  std::uint64_t traversal_limit_words = std::uint64_t{8} << 20;
  // Deepest chain of nested structs/lists accepted. Default: 64
  int nesting_limit = 64;
};

// Serializes a message into one buffer in the format above.
std::string encode(capnp::MessageBuilder& message);

// Bytes encode() produces for `message`.
std::size_t encoded_size(capnp::MessageBuilder& message);
// Writes encode()'s bytes to `out`, which has room for encoded_size(message) bytes: for callers
// that own a buffer already (a ZeroMQ message), saving a string and a copy.
void encode_to(capnp::MessageBuilder& message, char* out);

// Copies a struct (reader or builder of any generated type) into a fresh message and serializes it.
template <typename StructReaderOrBuilder>
std::string encode_struct(StructReaderOrBuilder value) {
  typename capnp::FromAny<StructReaderOrBuilder>::Reader reader = value;
  capnp::MallocMessageBuilder message;
  message.setRoot(reader);
  return encode(message);
}

// A decoded, validated message whose root has the schema given to decode_message(). Owns its
// aligned copy of the bytes, or the owner of bytes read in place; movable, not copyable. Readers
// taken from it live as long as it does.
class DecodedMessage {
 public:
  DecodedMessage(DecodedMessage&&) noexcept;
  DecodedMessage& operator=(DecodedMessage&&) noexcept;
  ~DecodedMessage();

  capnp::StructSchema schema() const { return schema_; }
  // Size of the encoded message in bytes (header included).
  std::size_t encoded_bytes() const { return encoded_bytes_; }
  // The root as T; T must be the type whose schema the message was validated against.
  template <typename T>
  typename T::Reader root() const {
    return reader_->getRoot<T>();
  }

 private:
  friend Result<DecodedMessage> decode_message(std::string_view bytes,
                                               std::shared_ptr<const void> owner,
                                               capnp::StructSchema schema,
                                               const DecodeOptions& options);
  struct Storage;  // the reader, and the aligned copy of the bytes or their owner (wire.cc)
  struct StorageDeleter {
    void operator()(Storage* storage) const noexcept;
  };
  using StoragePtr = std::unique_ptr<Storage, StorageDeleter>;
  DecodedMessage(StoragePtr storage, capnp::StructSchema schema, std::size_t encoded_bytes);

  StoragePtr storage_;  // the reader and the words it reads
  capnp::MessageReader* reader_ = nullptr;
  capnp::StructSchema schema_;
  std::size_t encoded_bytes_ = 0;
};

// Decodes and validates `bytes` as a message whose root is a `schema` struct.
// Errors: Corruption for anything malformed (truncated, trailing bytes, bad segment table,
// out-of-bounds or mistyped pointers, text without its NUL, too deep, too large to traverse);
// the message says what was wrong and where in the buffer when known.
Result<DecodedMessage> decode_message(std::string_view bytes, capnp::StructSchema schema,
                                      const DecodeOptions& options = DecodeOptions());

// decode_message() over bytes that `owner` keeps alive (a received network frame, say). When
// `bytes` is 8-byte aligned the message is validated and read where it lies and `owner` is kept
// with it, which saves allocating and copying the whole message (for large messages, most of the
// cost of a decode); unaligned bytes are copied as decode_message() does and `owner` is released.
// Errors: as decode_message().
Result<DecodedMessage> decode_message(std::string_view bytes, std::shared_ptr<const void> owner,
                                      capnp::StructSchema schema,
                                      const DecodeOptions& options = DecodeOptions());

// A DecodedMessage whose root is a T (a generated struct type such as schema::Task).
template <typename T>
class Decoded {
 public:
  explicit Decoded(DecodedMessage message) : message_(std::move(message)) {}
  typename T::Reader root() const { return message_.root<T>(); }
  std::size_t encoded_bytes() const { return message_.encoded_bytes(); }

 private:
  DecodedMessage message_;
};

// decode_message() for a generated type: decode<schema::Verdict>(bytes).
template <typename T>
Result<Decoded<T>> decode(std::string_view bytes, const DecodeOptions& options = DecodeOptions()) {
  Result<DecodedMessage> message = decode_message(bytes, capnp::Schema::from<T>(), options);
  if (!message.ok()) return message.status();
  return Decoded<T>(std::move(message).value());
}

// decode_message() in place for a generated type (see the owner overload above).
template <typename T>
Result<Decoded<T>> decode(std::string_view bytes, std::shared_ptr<const void> owner,
                          const DecodeOptions& options = DecodeOptions()) {
  Result<DecodedMessage> message =
      decode_message(bytes, std::move(owner), capnp::Schema::from<T>(), options);
  if (!message.ok()) return message.status();
  return Decoded<T>(std::move(message).value());
}

}  // namespace dice::wire
