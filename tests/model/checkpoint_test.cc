#include "model/checkpoint/checkpoint.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "common/disk_space.h"
#include "common/remove_tree.h"
#include "model/checkpoint/checkpoint_writer.h"
#include "tests/common/fixed_free_space_file_system.h"

namespace dice {
namespace {

namespace fs = std::filesystem;

ModelConfig tiny_config() {
  ModelConfig c;
  c.vocab_size = 16;
  c.hidden_size = 8;
  c.intermediate_size = 12;
  c.num_hidden_layers = 1;
  c.num_attention_heads = 2;
  c.num_key_value_heads = 1;
  c.head_dim = 4;
  c.block_size = 4;
  c.mask_token_id = 15;
  c.dtype = "float32";
  return c;
}

class CheckpointTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/dice_checkpoint_test_XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    for (int i = 0; i < 3; ++i) {
      data_.emplace_back(static_cast<size_t>(10 * (i + 1)));
      for (size_t j = 0; j < data_.back().size(); ++j) data_.back()[j] = float(i * 100 + j);
      views_.push_back({"t" + std::to_string(i),
                        DType::kF32,
                        {static_cast<int64_t>(data_.back().size())},
                        data_.back().data(),
                        data_.back().size() * 4});
    }
  }
  void TearDown() override { EXPECT_TRUE(remove_tree(dir_).ok()); }

  void write_text(const std::string& name, const std::string& text) {
    std::ofstream(dir_ + "/" + name) << text;
  }

  void expect_tensors_match(const Checkpoint& ckpt) {
    ASSERT_EQ(ckpt.tensors().size(), views_.size());
    for (const TensorView& v : views_) {
      const TensorInfo* t = ckpt.find(v.name);
      ASSERT_NE(t, nullptr) << v.name;
      EXPECT_EQ(t->shape, v.shape);
      EXPECT_EQ(std::memcmp(t->data, v.data, v.nbytes), 0) << v.name;
    }
  }

  std::string dir_;
  std::vector<std::vector<float>> data_;
  std::vector<TensorView> views_;
};

TEST_F(CheckpointTest, SingleFileRoundTrip) {
  ASSERT_TRUE(write_model_dir(dir_, tiny_config(), views_).ok());
  EXPECT_TRUE(fs::exists(dir_ + "/model.safetensors"));
  EXPECT_FALSE(fs::exists(dir_ + "/model.safetensors.index.json"));
  auto ckpt = Checkpoint::open(dir_);
  ASSERT_TRUE(ckpt.ok()) << ckpt.status().to_string();
  EXPECT_EQ(ckpt->config().hidden_size, 8);
  EXPECT_EQ(ckpt->config().num_key_value_heads, 1);
  expect_tensors_match(*ckpt);
}

TEST_F(CheckpointTest, WritesBelowFoldersThatDoNotExistYet) {
  const std::string nested = dir_ + "/runs/toy/models/sdar-toy";
  ASSERT_TRUE(write_model_dir(nested, tiny_config(), views_).ok());
  auto ckpt = Checkpoint::open(nested);
  ASSERT_TRUE(ckpt.ok()) << ckpt.status().to_string();
  expect_tensors_match(*ckpt);
}

TEST_F(CheckpointTest, AFolderThatCannotBeMadeIsAnErrorNamingIt) {
  write_text("a_file", "not a folder");
  const Status s = write_model_dir(dir_ + "/a_file/model", tiny_config(), views_);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.to_string().find("a_file/model"), std::string::npos) << s.to_string();
}

TEST_F(CheckpointTest, ShardedRoundTrip) {
  CheckpointWriterOptions options;
  options.max_shard_bytes = 100;  // 40 + 80 + 120 bytes: three shards
  ASSERT_TRUE(write_model_dir(dir_, tiny_config(), views_, options).ok());
  EXPECT_FALSE(fs::exists(dir_ + "/model.safetensors"));
  EXPECT_TRUE(fs::exists(dir_ + "/model.safetensors.index.json"));
  EXPECT_TRUE(fs::exists(dir_ + "/model-00003-of-00003.safetensors"));
  auto ckpt = Checkpoint::open(dir_);
  ASSERT_TRUE(ckpt.ok()) << ckpt.status().to_string();
  expect_tensors_match(*ckpt);
  EXPECT_NE(ckpt->file_of("t2").find("model-00003-of-00003.safetensors"), std::string::npos);
}

// Each shard is checked against the free space for the bytes it is about to write, before its
// temporary is made: with room for the first shard and not the second (an 8 KiB tensor), the
// second is refused with its own name and exact size and the first stays. The free space is a
// test double's (FixedFreeSpaceFileSystem), fixed at 64 KiB; the floor leaves 4 KiB of it.
TEST_F(CheckpointTest, EachShardIsCheckedAgainstTheBytesItIsAboutToWrite) {
  std::vector<float> large(2048, 1.0f);
  std::vector<TensorView> views = {views_[0], {"large", DType::kF32, {2048}, large.data(), 8192}};
  CheckpointWriterOptions options;
  options.max_shard_bytes = 64;  // a shard per tensor
  const std::string reference = dir_ + "/reference";
  ASSERT_TRUE(write_model_dir(reference, tiny_config(), views, options).ok());
  const std::uintmax_t second_bytes =
      fs::file_size(reference + "/model-00002-of-00002.safetensors");
  ASSERT_LT(fs::file_size(reference + "/model-00001-of-00002.safetensors"), 4096u);
  ASSERT_LT(fs::file_size(reference + "/config.json"), 4096u);

  testing_util::FixedFreeSpaceFileSystem disk(16);  // 64 KiB
  options.file_system = &disk;
  options.min_free_bytes = 60 * 1024;
  const std::string dir = dir_ + "/policy";
  const Status refused = write_model_dir(dir, tiny_config(), views, options);
  ASSERT_FALSE(refused.ok());
  EXPECT_TRUE(is_disk_space_shortage(refused)) << refused.to_string();
  const std::string second = dir + "/model-00002-of-00002.safetensors";
  EXPECT_NE(refused.message().find(dir + ": not enough free disk space for the new " + second +
                                   ": it needs " + std::to_string(second_bytes) + " bytes"),
            std::string::npos)
      << refused.to_string();
  EXPECT_TRUE(fs::exists(dir + "/model-00001-of-00002.safetensors"));
  EXPECT_FALSE(fs::exists(second));
  EXPECT_FALSE(fs::exists(second + ".tmp"));
  EXPECT_NE(std::find(disk.opened.begin(), disk.opened.end(),
                      dir + "/model-00001-of-00002.safetensors.tmp"),
            disk.opened.end());
  EXPECT_EQ(std::find(disk.opened.begin(), disk.opened.end(), second + ".tmp"), disk.opened.end())
      << "the second shard's temporary was made";

  disk.free_blocks = 32;  // 128 KiB: room for it
  ASSERT_TRUE(write_model_dir(dir, tiny_config(), views, options).ok());
  EXPECT_EQ(fs::file_size(second), second_bytes);
}

TEST_F(CheckpointTest, IndexNamingAbsentTensorIsCorrupt) {
  CheckpointWriterOptions options;
  options.max_shard_bytes = 100;
  ASSERT_TRUE(write_model_dir(dir_, tiny_config(), views_, options).ok());
  write_text("model.safetensors.index.json",
             R"({"weight_map":{"t0":"model-00001-of-00003.safetensors",)"
             R"("t1":"model-00002-of-00003.safetensors","t2":"model-00003-of-00003.safetensors",)"
             R"("ghost":"model-00001-of-00003.safetensors"}})");
  auto ckpt = Checkpoint::open(dir_);
  ASSERT_FALSE(ckpt.ok());
  EXPECT_EQ(ckpt.status().code(), StatusCode::kCorruption);
  EXPECT_NE(ckpt.status().message().find("tensor 'ghost'"), std::string::npos)
      << ckpt.status().to_string();
}

TEST_F(CheckpointTest, IndexAndShardsMustAgree) {
  CheckpointWriterOptions options;
  options.max_shard_bytes = 100;
  ASSERT_TRUE(write_model_dir(dir_, tiny_config(), views_, options).ok());
  write_text("model.safetensors.index.json",
             R"({"weight_map":{"t0":"model-00001-of-00003.safetensors",)"
             R"("t1":"model-00002-of-00003.safetensors"}})");
  ASSERT_TRUE(fs::exists(dir_ + "/model-00003-of-00003.safetensors"));
  // t2's shard is not named, so it is not read; its tensor is simply absent.
  auto ckpt = Checkpoint::open(dir_);
  ASSERT_TRUE(ckpt.ok());
  EXPECT_EQ(ckpt->find("t2"), nullptr);
  // The index sends t0 to a shard that does not hold it.
  write_text("model.safetensors.index.json",
             R"({"weight_map":{"t0":"model-00002-of-00003.safetensors",)"
             R"("t1":"model-00002-of-00003.safetensors"}})");
  auto wrong_shard = Checkpoint::open(dir_);
  ASSERT_FALSE(wrong_shard.ok());
  EXPECT_EQ(wrong_shard.status().code(), StatusCode::kCorruption);
  EXPECT_NE(wrong_shard.status().message().find("tensor 't0' is mapped to"), std::string::npos)
      << wrong_shard.status().to_string();
}

TEST_F(CheckpointTest, ShardHoldingAnUnlistedTensorIsCorrupt) {
  CheckpointWriterOptions options;
  options.max_shard_bytes = 130;  // shard 1: t0 + t1, shard 2: t2
  ASSERT_TRUE(write_model_dir(dir_, tiny_config(), views_, options).ok());
  write_text("model.safetensors.index.json",
             R"({"weight_map":{"t0":"model-00001-of-00002.safetensors",)"
             R"("t2":"model-00002-of-00002.safetensors"}})");
  auto ckpt = Checkpoint::open(dir_);
  ASSERT_FALSE(ckpt.ok());
  EXPECT_EQ(ckpt.status().code(), StatusCode::kCorruption);
  EXPECT_NE(ckpt.status().message().find("model-00001-of-00002.safetensors: tensor 't1' is not "
                                         "mapped to this shard"),
            std::string::npos)
      << ckpt.status().to_string();
}

TEST_F(CheckpointTest, IndexPointingOutsideTheDirectoryIsCorrupt) {
  ASSERT_TRUE(write_model_dir(dir_, tiny_config(), views_).ok());
  write_text("model.safetensors.index.json", R"({"weight_map":{"t0":"../x.safetensors"}})");
  auto ckpt = Checkpoint::open(dir_);
  ASSERT_FALSE(ckpt.ok());
  EXPECT_EQ(ckpt.status().code(), StatusCode::kCorruption);
  EXPECT_NE(ckpt.status().message().find("weight_map.t0"), std::string::npos);
}

TEST_F(CheckpointTest, MissingPiecesAreNotFound) {
  auto no_config = Checkpoint::open(dir_);
  ASSERT_FALSE(no_config.ok());
  EXPECT_EQ(no_config.status().code(), StatusCode::kNotFound);
  EXPECT_NE(no_config.status().message().find("config.json"), std::string::npos);

  ASSERT_TRUE(write_model_dir(dir_, tiny_config(), views_).ok());
  fs::remove(dir_ + "/model.safetensors");
  auto no_weights = Checkpoint::open(dir_);
  ASSERT_FALSE(no_weights.ok());
  EXPECT_EQ(no_weights.status().code(), StatusCode::kNotFound);
  EXPECT_NE(no_weights.status().message().find("model.safetensors"), std::string::npos);
}

TEST_F(CheckpointTest, RewritingReplacesAStaleLayout) {
  CheckpointWriterOptions sharded;
  sharded.max_shard_bytes = 100;
  ASSERT_TRUE(write_model_dir(dir_, tiny_config(), views_, sharded).ok());
  ASSERT_TRUE(write_model_dir(dir_, tiny_config(), views_).ok());  // now one file
  EXPECT_FALSE(fs::exists(dir_ + "/model.safetensors.index.json"));
  auto ckpt = Checkpoint::open(dir_);
  ASSERT_TRUE(ckpt.ok()) << ckpt.status().to_string();
  expect_tensors_match(*ckpt);
}

}  // namespace
}  // namespace dice
