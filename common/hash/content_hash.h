// Content hashes: SHA-1 as 40 lowercase hex digits, used where dice names a thing by its bytes
// (the "kernels" column family of the reward log is keyed by kernel_source_hash()).
//
// SHA-1 is used as a cache key and identifier, not for security: nobody gains by forging a
// collision between two candidate kernels.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace dice {

// SHA-1 of `bytes` as 40 lowercase hex digits. content_hash_hex("abc") ==
// "a9993e364706816aba3e25717850c26c9cd0d89d".
std::string content_hash_hex(std::string_view bytes);

// SHA-1 of several parts, each framed as "<decimal byte length>:<bytes>" and concatenated, so
// that moving bytes between neighbouring parts always changes the hash: ("ab", "c") and
// ("a", "bc") hash differently even though their concatenations agree. In Python:
//   hashlib.sha1(b"".join(b"%d:%s" % (len(p), p) for p in parts)).hexdigest()
std::string content_hash_hex_parts(const std::vector<std::string_view>& parts);

// The identity of a compiled kernel: its source, the compiler flags and the toolchain (nvcc
// version line, GPU arch). Equal to content_hash_hex_parts({source, compile_flags, toolchain}).
std::string kernel_source_hash(std::string_view source, std::string_view compile_flags,
                               std::string_view toolchain);

}  // namespace dice
