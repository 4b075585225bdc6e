#include "model/checkpoint/safetensors.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "common/remove_tree.h"
#include "model/checkpoint/checkpoint_writer.h"

namespace dice {
namespace {

// A safetensors image: 8-byte little-endian header length, header, data.
std::vector<uint8_t> image(const std::string& header, const std::vector<uint8_t>& data) {
  std::vector<uint8_t> out(8);
  // Room for all of it first: the reallocating insert trips GCC 12's -Warray-bounds at -O3 (a
  // false positive that failed Release builds with DICE_WERROR).
  out.reserve(8 + header.size() + data.size());
  uint64_t n = header.size();
  for (int i = 0; i < 8; ++i) out[i] = static_cast<uint8_t>(n >> (8 * i));
  out.insert(out.end(), header.begin(), header.end());
  out.insert(out.end(), data.begin(), data.end());
  return out;
}

Status parse(const std::vector<uint8_t>& bytes, std::vector<TensorInfo>* tensors = nullptr) {
  std::vector<TensorInfo> local;
  std::map<std::string, std::string> metadata;
  return parse_safetensors(bytes.data(), bytes.size(), "w.safetensors", tensors ? tensors : &local,
                           &metadata);
}

// Expects a corruption error whose message names the file and contains `needle`.
void expect_corrupt(const std::string& header, const std::vector<uint8_t>& data,
                    const std::string& needle) {
  Status s = parse(image(header, data));
  ASSERT_FALSE(s.ok()) << header;
  EXPECT_EQ(s.code(), StatusCode::kCorruption) << s.to_string();
  EXPECT_NE(s.message().find("w.safetensors"), std::string::npos) << s.to_string();
  EXPECT_NE(s.message().find(needle), std::string::npos) << s.to_string();
}

const std::vector<uint8_t> k8Bytes(8, 0xab);

TEST(SafetensorsTest, ParsesValidHeader) {
  std::vector<uint8_t> data(8 + 6);
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<uint8_t>(i);
  std::vector<TensorInfo> tensors;
  std::vector<uint8_t> bytes = image(
      R"({"__metadata__":{"format":"pt"},"b":{"dtype":"BF16","shape":[3],"data_offsets":[8,14]},)"
      R"("a":{"dtype":"F32","shape":[2,1],"data_offsets":[0,8]}})",
      data);
  ASSERT_TRUE(parse(bytes, &tensors).ok());
  ASSERT_EQ(tensors.size(), 2u);
  EXPECT_EQ(tensors[0].name, "a");  // sorted by name
  EXPECT_EQ(tensors[0].dtype, DType::kF32);
  EXPECT_EQ(tensors[0].shape, (std::vector<int64_t>{2, 1}));
  EXPECT_EQ(tensors[0].nbytes, 8u);
  EXPECT_EQ(tensors[1].name, "b");
  EXPECT_EQ(tensors[1].dtype, DType::kBF16);
  EXPECT_EQ(tensors[1].numel(), 3u);
  EXPECT_EQ(tensors[1].data[0], 8);  // points at its own bytes
}

TEST(SafetensorsTest, ScalarAndEmptyTensorsAreValid) {
  EXPECT_TRUE(parse(image(R"({"s":{"dtype":"F32","shape":[],"data_offsets":[0,4]},)"
                          R"("e":{"dtype":"F16","shape":[0,5],"data_offsets":[4,4]}})",
                          std::vector<uint8_t>(4)))
                  .ok());
}

TEST(SafetensorsTest, ShortFileIsCorrupt) {
  std::vector<uint8_t> bytes = {1, 0, 0};
  Status s = parse(bytes);
  EXPECT_EQ(s.code(), StatusCode::kCorruption);
  EXPECT_NE(s.message().find("shorter than the 8-byte header length"), std::string::npos);
}

TEST(SafetensorsTest, HeaderLengthPastEndOfFileIsCorrupt) {
  std::vector<uint8_t> bytes = image("{}", {});
  bytes[0] = 200;  // claims a 200-byte header in a 10-byte file
  Status s = parse(bytes);
  EXPECT_EQ(s.code(), StatusCode::kCorruption);
  EXPECT_NE(s.message().find("runs past the end"), std::string::npos) << s.to_string();
}

TEST(SafetensorsTest, HugeHeaderLengthIsCorrupt) {
  std::vector<uint8_t> bytes = image("{}", {});
  bytes[7] = 0x7f;
  Status s = parse(bytes);
  EXPECT_EQ(s.code(), StatusCode::kCorruption);
  EXPECT_NE(s.message().find("exceeds the limit"), std::string::npos) << s.to_string();
}

TEST(SafetensorsTest, BadJsonIsCorrupt) {
  expect_corrupt(R"({"a":{"dtype":"F32",)", {}, "not valid JSON");
  expect_corrupt(R"([1, 2])", {}, "not a JSON object");
}

TEST(SafetensorsTest, BadEntriesNameTheTensor) {
  expect_corrupt(R"({"w":3})", {}, "tensor 'w': entry is not an object");
  expect_corrupt(R"({"w":{"shape":[2],"data_offsets":[0,8]}})", k8Bytes, "tensor 'w': missing");
  expect_corrupt(R"({"w":{"dtype":"Q4","shape":[2],"data_offsets":[0,8]}})", k8Bytes,
                 "tensor 'w': unknown dtype 'Q4'");
  expect_corrupt(R"({"w":{"dtype":"F32","data_offsets":[0,8]}})", k8Bytes,
                 "tensor 'w': missing array field 'shape'");
  expect_corrupt(R"({"w":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})", k8Bytes,
                 "tensor 'w': shape entries");
  expect_corrupt(R"({"w":{"dtype":"F32","shape":[2.5],"data_offsets":[0,8]}})", k8Bytes,
                 "tensor 'w': shape entries");
  expect_corrupt(R"({"w":{"dtype":"F32","shape":[2]}})", k8Bytes, "tensor 'w': missing field");
  expect_corrupt(R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0]}})", k8Bytes,
                 "tensor 'w': missing field 'data_offsets'");
  expect_corrupt(R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,-8]}})", k8Bytes,
                 "tensor 'w': data_offsets must be non-negative");
  expect_corrupt(R"({"__metadata__":{"format":1}})", {}, "__metadata__.format is not a string");
  expect_corrupt(R"({"__metadata__":[]})", {}, "__metadata__ is not an object");
}

TEST(SafetensorsTest, OffsetsThatLieAreCorrupt) {
  // end before begin
  expect_corrupt(R"({"w":{"dtype":"F32","shape":[0],"data_offsets":[8,4]}})", k8Bytes,
                 "tensor 'w': data_offsets [8, 4] end before begin");
  // past the data section
  expect_corrupt(R"({"w":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}})", k8Bytes,
                 "tensor 'w': data_offsets end 16 is past the 8-byte data section");
  // size disagrees with shape * dtype
  expect_corrupt(R"({"w":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", k8Bytes,
                 "tensor 'w': data_offsets span 8 bytes but F32 shape needs 12");
  // shape product overflows
  expect_corrupt(R"({"w":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,8]}})",
                 k8Bytes, "tensor 'w': shape overflows");
}

TEST(SafetensorsTest, OverlapsGapsAndTrailingBytesAreCorrupt) {
  expect_corrupt(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                 R"("b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
                 k8Bytes, "overlap the previous tensor");
  expect_corrupt(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", k8Bytes,
                 "tensor 'a': gap of 4 bytes");
  expect_corrupt(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", k8Bytes,
                 "4 bytes after the last tensor belong to no tensor");
}

class SafetensorsFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/dice_safetensors_test_XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { EXPECT_TRUE(remove_tree(dir_).ok()); }
  std::string dir_;
};

TEST_F(SafetensorsFileTest, WriterOutputReadsBack) {
  std::vector<float> a = {1.5f, -2.0f, 3.25f, 0.0f, 7.0f, 8.0f};
  std::vector<uint16_t> b = {0x3f80, 0xc000, 0x4040};  // bf16 1, -2, 3
  std::string path = dir_ + "/t.safetensors";
  ASSERT_TRUE(write_safetensors(path,
                                {{"layer.a", DType::kF32, {2, 3}, a.data(), a.size() * 4},
                                 {"layer.b", DType::kBF16, {3}, b.data(), b.size() * 2}},
                                {{"note", "x"}})
                  .ok());
  auto file = SafetensorsFile::open(path);
  ASSERT_TRUE(file.ok()) << file.status().to_string();
  EXPECT_EQ(file->metadata().at("format"), "pt");
  EXPECT_EQ(file->metadata().at("note"), "x");
  const TensorInfo* ta = file->find("layer.a");
  ASSERT_NE(ta, nullptr);
  EXPECT_EQ(ta->shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(std::memcmp(ta->data, a.data(), 24), 0);
  const TensorInfo* tb = file->find("layer.b");
  ASSERT_NE(tb, nullptr);
  EXPECT_EQ(tb->dtype, DType::kBF16);
  EXPECT_EQ(std::memcmp(tb->data, b.data(), 6), 0);
  EXPECT_EQ(file->find("layer.c"), nullptr);
  // The data section starts 8-byte aligned.
  EXPECT_EQ((ta->data - tb->data) % 2, 0);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(ta->data) % 8, 0u);
}

TEST_F(SafetensorsFileTest, TruncatedFileIsCorruptNamingFileAndTensor) {
  std::vector<float> a(16, 1.0f);
  std::string path = dir_ + "/t.safetensors";
  ASSERT_TRUE(write_safetensors(path, {{"w", DType::kF32, {16}, a.data(), 64}}).ok());
  ASSERT_EQ(truncate(path.c_str(), static_cast<off_t>(std::filesystem::file_size(path) - 10)), 0);
  auto file = SafetensorsFile::open(path);
  ASSERT_FALSE(file.ok());
  EXPECT_EQ(file.status().code(), StatusCode::kCorruption);
  EXPECT_NE(file.status().message().find(path), std::string::npos);
  EXPECT_NE(file.status().message().find("tensor 'w'"), std::string::npos)
      << file.status().to_string();
}

TEST_F(SafetensorsFileTest, MissingFileIsNotFound) {
  auto file = SafetensorsFile::open(dir_ + "/absent.safetensors");
  ASSERT_FALSE(file.ok());
  EXPECT_EQ(file.status().code(), StatusCode::kNotFound);
  EXPECT_NE(file.status().message().find("absent.safetensors"), std::string::npos);
}

TEST_F(SafetensorsFileTest, WriterRejectsSizeMismatchAndDuplicates) {
  std::vector<float> a(4);
  EXPECT_EQ(
      write_safetensors(dir_ + "/x.safetensors", {{"w", DType::kF32, {3}, a.data(), 16}}).code(),
      StatusCode::kInvalidArgument);
  EXPECT_EQ(write_safetensors(dir_ + "/x.safetensors", {{"w", DType::kF32, {4}, a.data(), 16},
                                                        {"w", DType::kF32, {4}, a.data(), 16}})
                .code(),
            StatusCode::kInvalidArgument);
  std::ifstream absent(dir_ + "/x.safetensors");
  EXPECT_FALSE(absent.good());  // nothing half-written left behind
}

}  // namespace
}  // namespace dice
