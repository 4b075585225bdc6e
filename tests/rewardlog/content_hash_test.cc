#include "common/hash/content_hash.h"

#include <gtest/gtest.h>

#include <string>

namespace dice {
namespace {

// FIPS 180 / RFC 3174 test vectors.
TEST(ContentHashTest, MatchesStandardSha1Vectors) {
  EXPECT_EQ(content_hash_hex("abc"), "a9993e364706816aba3e25717850c26c9cd0d89d");
  EXPECT_EQ(content_hash_hex(""), "da39a3ee5e6b4b0d3255bfef95601890afd80709");
  EXPECT_EQ(content_hash_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "84983e441c3bd26ebaae4aa1f95129e5e54670f1");
  EXPECT_EQ(content_hash_hex(std::string(1000000, 'a')),
            "34aa973cd4c4daa4f61eeb2bdbad27316534016f");
}

TEST(ContentHashTest, HashesBinaryBytesIncludingNul) {
  const std::string with_nul("a\0b", 3);
  EXPECT_NE(content_hash_hex(with_nul), content_hash_hex("ab"));
  EXPECT_EQ(content_hash_hex(with_nul).size(), 40u);
}

TEST(ContentHashTest, PartsAreLengthFramed) {
  EXPECT_EQ(content_hash_hex_parts({"ab", "c"}), content_hash_hex("2:ab1:c"));
  EXPECT_EQ(content_hash_hex_parts({}), content_hash_hex(""));
  EXPECT_EQ(content_hash_hex_parts({""}), content_hash_hex("0:"));
}

TEST(ContentHashTest, MovingBytesBetweenPartsChangesTheHash) {
  EXPECT_NE(content_hash_hex_parts({"ab", "c"}), content_hash_hex_parts({"a", "bc"}));
  EXPECT_NE(content_hash_hex_parts({"a", ""}), content_hash_hex_parts({"", "a"}));
  EXPECT_NE(content_hash_hex_parts({"1:a"}), content_hash_hex_parts({"", "a"}));
}

TEST(ContentHashTest, KernelHashCoversSourceFlagsAndToolchain) {
  const std::string base = kernel_source_hash("__global__ void k(){}", "-O3", "nvcc 13.0 sm_90");
  EXPECT_EQ(base, content_hash_hex_parts({"__global__ void k(){}", "-O3", "nvcc 13.0 sm_90"}));
  EXPECT_NE(base, kernel_source_hash("__global__ void k(){ }", "-O3", "nvcc 13.0 sm_90"));
  EXPECT_NE(base, kernel_source_hash("__global__ void k(){}", "-O2", "nvcc 13.0 sm_90"));
  EXPECT_NE(base, kernel_source_hash("__global__ void k(){}", "-O3", "nvcc 12.4 sm_90"));
}

}  // namespace
}  // namespace dice
