#include "model/weights.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <functional>

#include "common/remove_tree.h"
#include "tests/model/model_test_util.h"

namespace dice {
namespace {

namespace fs = std::filesystem;
using testing_util::random_lm;
using testing_util::random_tokens;
using testing_util::tiny_config;

class WeightsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/dice_weights_test_XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    lm_ = random_lm(config_, 11);
  }
  void TearDown() override { EXPECT_TRUE(remove_tree(dir_).ok()); }

  // Writes the model's tensors after `edit` had its way with the list.
  void write_edited(const std::function<void(std::vector<TensorView>&)>& edit) {
    std::vector<TensorView> views;
    for (NamedParameter& p : hf_named_parameters(*lm_)) {
      views.push_back({p.name, DType::kF32,
                       std::vector<int64_t>(p.tensor.sizes().begin(), p.tensor.sizes().end()),
                       p.tensor.data_ptr(), static_cast<size_t>(p.tensor.nbytes())});
    }
    edit(views);
    ASSERT_TRUE(write_model_dir(dir_, config_, views).ok());
  }

  void expect_load_error(const std::string& needle) {
    auto loaded = load_qwen3_lm(dir_);
    ASSERT_FALSE(loaded.ok()) << needle;
    EXPECT_EQ(loaded.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(loaded.status().message().find(needle), std::string::npos)
        << loaded.status().to_string();
  }

  torch::NoGradGuard no_grad_;
  std::string dir_;
  ModelConfig config_ = tiny_config();
  Qwen3LM lm_{nullptr};
};

TEST_F(WeightsTest, NameTableCoversEveryParameterOnce) {
  auto named = hf_named_parameters(*lm_);
  EXPECT_EQ(named.size(), 1 + 11 * 2 + 1 + 1u);
  EXPECT_EQ(named.size(), lm_->parameters().size());
  EXPECT_EQ(named[0].name, "model.embed_tokens.weight");
  EXPECT_EQ(named[6].name, "model.layers.0.self_attn.q_norm.weight");
  EXPECT_EQ(named.back().name, "lm_head.weight");
  for (const NamedParameter& p : named) {
    size_t owners = 0;
    for (const at::Tensor& q : lm_->parameters()) owners += q.is_same(p.tensor);
    EXPECT_EQ(owners, 1u) << p.name;
  }
}

TEST_F(WeightsTest, SaveLoadRoundTripSharded) {
  CheckpointWriterOptions options;
  options.max_shard_bytes = 16 * 1024;  // several shards for this tiny model
  ASSERT_TRUE(save_qwen3_lm(*lm_, dir_, options).ok());
  ASSERT_TRUE(fs::exists(dir_ + "/model.safetensors.index.json"));
  auto loaded = load_qwen3_lm(dir_);
  ASSERT_TRUE(loaded.ok()) << loaded.status().to_string();
  auto a = hf_named_parameters(*lm_);
  auto b = hf_named_parameters(**loaded);
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i)
    EXPECT_TRUE(at::equal(a[i].tensor, b[i].tensor)) << a[i].name;
  at::Tensor tokens = random_tokens(1, 8, config_);
  EXPECT_TRUE(
      at::equal(lm_->forward_block_causal(tokens), (*loaded)->forward_block_causal(tokens)));
}

TEST_F(WeightsTest, LoadConvertsDtypeOnTheWay) {
  ASSERT_TRUE(save_qwen3_lm(*lm_, dir_).ok());
  auto bf16 = load_qwen3_lm(dir_, at::TensorOptions().dtype(at::kBFloat16));
  ASSERT_TRUE(bf16.ok()) << bf16.status().to_string();
  EXPECT_EQ((*bf16)->model->embed_tokens.scalar_type(), at::kBFloat16);
  EXPECT_TRUE(at::equal((*bf16)->lm_head, lm_->lm_head.to(at::kBFloat16)));
  // Saved in bf16, config.json says so and a reload keeps the values.
  std::string bf16_dir = dir_ + "/bf16";
  ASSERT_TRUE(save_qwen3_lm(**bf16, bf16_dir).ok());
  auto ckpt = Checkpoint::open(bf16_dir);
  ASSERT_TRUE(ckpt.ok());
  EXPECT_EQ(ckpt->config().dtype, "bfloat16");
  EXPECT_EQ(ckpt->find("lm_head.weight")->dtype, DType::kBF16);
}

TEST_F(WeightsTest, TiedModelSavesNoLmHead) {
  ModelConfig tied = config_;
  tied.tie_word_embeddings = true;
  Qwen3LM lm = random_lm(tied, 3);
  ASSERT_TRUE(save_qwen3_lm(*lm, dir_).ok());
  auto ckpt = Checkpoint::open(dir_);
  ASSERT_TRUE(ckpt.ok());
  EXPECT_EQ(ckpt->find("lm_head.weight"), nullptr);
  EXPECT_TRUE(ckpt->config().tie_word_embeddings);
  auto loaded = load_qwen3_lm(dir_);
  ASSERT_TRUE(loaded.ok()) << loaded.status().to_string();
  EXPECT_TRUE((*loaded)->lm_head.is_same((*loaded)->model->embed_tokens));
  EXPECT_TRUE(at::equal((*loaded)->lm_head, lm->model->embed_tokens));
}

TEST_F(WeightsTest, MissingTensorIsAnError) {
  write_edited([](std::vector<TensorView>& v) {
    v.erase(std::remove_if(
                v.begin(), v.end(),
                [](const TensorView& t) { return t.name == "model.layers.1.mlp.up_proj.weight"; }),
            v.end());
  });
  expect_load_error("tensor 'model.layers.1.mlp.up_proj.weight' is missing");
}

TEST_F(WeightsTest, WrongShapeIsAnError) {
  write_edited([&](std::vector<TensorView>& v) {
    for (TensorView& t : v) {
      if (t.name == "model.layers.0.self_attn.k_norm.weight") {
        t.shape = {8};
        t.nbytes = 8 * 4;
      }
    }
  });
  expect_load_error(
      "tensor 'model.layers.0.self_attn.k_norm.weight': shape [8] but config.json "
      "implies [16]");
}

TEST_F(WeightsTest, ExtraTensorIsAnError) {
  std::vector<float> extra(4);
  write_edited([&](std::vector<TensorView>& v) {
    v.push_back({"model.layers.2.mlp.up_proj.weight", DType::kF32, {4}, extra.data(), 16});
  });
  expect_load_error("unexpected tensor 'model.layers.2.mlp.up_proj.weight'");
}

TEST_F(WeightsTest, IntegerTensorIsAnError) {
  std::vector<int32_t> ints(config_.hidden_size);
  write_edited([&](std::vector<TensorView>& v) {
    for (TensorView& t : v) {
      if (t.name == "model.norm.weight") {
        t.dtype = DType::kI32;
        t.data = ints.data();
      }
    }
  });
  expect_load_error("tensor 'model.norm.weight': dtype I32 is not BF16, F16 or F32");
}

TEST_F(WeightsTest, ConfigThatDisagreesWithWeightsIsAnError) {
  ASSERT_TRUE(save_qwen3_lm(*lm_, dir_).ok());
  ModelConfig wider = config_;
  wider.intermediate_size = 64;
  // Rewrite only config.json by writing the model dir of another config over the same weights.
  auto ckpt = Checkpoint::open(dir_);
  ASSERT_TRUE(ckpt.ok());
  std::vector<TensorView> views;
  for (const auto& kv : ckpt->tensors()) {
    views.push_back(
        {kv.first, kv.second->dtype, kv.second->shape, kv.second->data, kv.second->nbytes});
  }
  std::string other = dir_ + "/wider";
  ASSERT_TRUE(write_model_dir(other, wider, views).ok());
  auto loaded = load_qwen3_lm(other);
  ASSERT_FALSE(loaded.ok());
  EXPECT_NE(loaded.status().message().find("mlp.gate_proj.weight': shape [48, 32] but "
                                           "config.json implies [64, 32]"),
            std::string::npos)
      << loaded.status().to_string();
}

// A checkpoint that does not fit is refused before anything is written, however late in the
// checkpoint order its fault lies: a model that held other weights keeps every one of them (a
// rollout worker goes on sampling with it, under its old version).
TEST_F(WeightsTest, ARefusedCheckpointLeavesEveryParameterAsItWas) {
  auto expect_refused_untouched = [&] {
    auto checkpoint = Checkpoint::open(dir_);
    ASSERT_TRUE(checkpoint.ok()) << checkpoint.status().to_string();
    Qwen3LM held = random_lm(config_, 12);
    std::vector<at::Tensor> before;
    for (const NamedParameter& p : hf_named_parameters(*held)) before.push_back(p.tensor.clone());
    EXPECT_FALSE(check_weights(*checkpoint, *held).ok());
    bool copying = true;
    Status loaded = load_weights(*checkpoint, *held, &copying);
    EXPECT_EQ(loaded.code(), StatusCode::kInvalidArgument) << loaded.to_string();
    EXPECT_FALSE(copying);
    const std::vector<NamedParameter> after = hf_named_parameters(*held);
    ASSERT_EQ(after.size(), before.size());
    for (size_t i = 0; i < after.size(); ++i) {
      EXPECT_TRUE(at::equal(after[i].tensor, before[i])) << after[i].name << " was overwritten";
    }
  };
  for (testing_util::CheckpointFault fault : testing_util::kCheckpointFaults) {
    SCOPED_TRACE(testing_util::fault_name(fault));
    ASSERT_TRUE(remove_tree(dir_).ok());
    ASSERT_TRUE(testing_util::write_faulty_checkpoint(*lm_, dir_, fault).ok());
    if (fault == testing_util::CheckpointFault::kTruncated) {
      // The file's sizes and offsets are checked on open: nothing is there to load from.
      auto checkpoint = Checkpoint::open(dir_);
      EXPECT_EQ(checkpoint.status().code(), StatusCode::kCorruption)
          << checkpoint.status().to_string();
      continue;
    }
    expect_refused_untouched();
  }
  SCOPED_TRACE("unexpected tensor");
  ASSERT_TRUE(remove_tree(dir_).ok());
  std::vector<float> extra(4);
  write_edited([&](std::vector<TensorView>& v) {
    v.push_back({"model.layers.2.mlp.up_proj.weight", DType::kF32, {4}, extra.data(), 16});
  });
  expect_refused_untouched();
}

}  // namespace
}  // namespace dice
