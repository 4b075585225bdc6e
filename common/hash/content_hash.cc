#include "common/hash/content_hash.h"

#include <boost/uuid/detail/sha1.hpp>

#include <cstdint>
#include <string>

namespace dice {
namespace {

constexpr char kHexDigits[] = "0123456789abcdef";

// Boost up to 1.85 returns the digest as five 32-bit words (most significant byte first within
// each word); 1.86 and later as 20 bytes. Both overloads print the standard SHA-1 hex form.
std::string digest_hex(const unsigned int (&words)[5]) {
  std::string hex;
  hex.reserve(40);
  for (unsigned int word : words) {
    for (int shift = 28; shift >= 0; shift -= 4) hex.push_back(kHexDigits[(word >> shift) & 0xf]);
  }
  return hex;
}

[[maybe_unused]] std::string digest_hex(const unsigned char (&bytes)[20]) {
  std::string hex;
  hex.reserve(40);
  for (unsigned char byte : bytes) {
    hex.push_back(kHexDigits[byte >> 4]);
    hex.push_back(kHexDigits[byte & 0xf]);
  }
  return hex;
}

std::string finish(boost::uuids::detail::sha1& sha) {
  boost::uuids::detail::sha1::digest_type digest;
  sha.get_digest(digest);
  return digest_hex(digest);
}

}  // namespace

std::string content_hash_hex(std::string_view bytes) {
  boost::uuids::detail::sha1 sha;
  sha.process_bytes(bytes.data(), bytes.size());
  return finish(sha);
}

std::string content_hash_hex_parts(const std::vector<std::string_view>& parts) {
  boost::uuids::detail::sha1 sha;
  for (std::string_view part : parts) {
    const std::string length = std::to_string(part.size()) + ":";
    sha.process_bytes(length.data(), length.size());
    sha.process_bytes(part.data(), part.size());
  }
  return finish(sha);
}

std::string kernel_source_hash(std::string_view source, std::string_view compile_flags,
                               std::string_view toolchain) {
  return content_hash_hex_parts({source, compile_flags, toolchain});
}

}  // namespace dice
