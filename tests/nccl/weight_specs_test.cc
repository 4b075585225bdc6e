// The broadcast's tensor list on a tiny random model (CPU): built in checkpoint order, checked
// against a model with each kind of difference named, carried through the schema unchanged; and
// what NCCL cannot take (CPU tensors) refused with the tensor named.
#include "model/weights/weight_specs.h"

#include <ATen/ATen.h>
#include <capnp/message.h>
#include <gtest/gtest.h>

#include "tests/model/model_test_util.h"

namespace dice::weights {
namespace {

using testing_util::random_lm;
using testing_util::tiny_config;

TEST(WeightSpecsTest, SpecsFollowCheckpointOrderInTheWireDtype) {
  Qwen3LM lm = random_lm(tiny_config(), 1);
  auto specs = broadcast_specs(*lm, at::kBFloat16);
  ASSERT_TRUE(specs.ok()) << specs.status().to_string();
  const auto params = hf_named_parameters(*lm);
  ASSERT_EQ(specs->size(), params.size());
  EXPECT_EQ((*specs)[0].name, "model.embed_tokens.weight");
  EXPECT_EQ((*specs)[0].shape, (std::vector<std::uint64_t>{64, 32}));
  for (std::size_t i = 0; i < params.size(); ++i) {
    EXPECT_EQ((*specs)[i].name, params[i].name);
    EXPECT_EQ((*specs)[i].dtype, "bf16");
  }
  EXPECT_FALSE(broadcast_specs(*lm, at::kLong).ok());
}

TEST(WeightSpecsTest, ValidationNamesTheFirstDifference) {
  Qwen3LM lm = random_lm(tiny_config(), 1);  // fp32
  auto specs = broadcast_specs(*lm, at::kFloat);
  ASSERT_TRUE(specs.ok());
  EXPECT_TRUE(validate_specs(*specs, *lm).ok());

  auto renamed = *specs;
  renamed[2].name = "model.layers.0.bogus";
  Status s = validate_specs(renamed, *lm);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("broadcast tensor 2 'model.layers.0.bogus'"), std::string::npos)
      << s.message();

  auto bf16 = *specs;
  bf16[1].dtype = "bf16";
  s = validate_specs(bf16, *lm);
  EXPECT_NE(s.message().find("dtype bf16, this worker holds f32"), std::string::npos)
      << s.message();

  auto reshaped = *specs;
  reshaped[0].shape = {65, 32};
  s = validate_specs(reshaped, *lm);
  EXPECT_NE(s.message().find("shape [65, 32], this worker holds [64, 32]"), std::string::npos)
      << s.message();

  auto shorter = *specs;
  shorter.pop_back();
  s = validate_specs(shorter, *lm);
  EXPECT_NE(s.message().find("tensors, this worker's model"), std::string::npos) << s.message();

  ModelConfig wider = tiny_config();
  wider.num_hidden_layers = 3;
  Qwen3LM other = random_lm(wider, 2);
  EXPECT_FALSE(validate_specs(*broadcast_specs(*other, at::kFloat), *lm).ok());
}

TEST(WeightSpecsTest, SchemaRoundTrip) {
  Qwen3LM lm = random_lm(tiny_config(), 1);
  auto specs = broadcast_specs(*lm, at::kBFloat16);
  ASSERT_TRUE(specs.ok());
  capnp::MallocMessageBuilder message;
  auto update = message.initRoot<schema::WeightsUpdate>();
  write_specs(*specs, update.initNccl().initTensors(static_cast<unsigned>(specs->size())));
  EXPECT_EQ(read_specs(update.asReader().getNccl().getTensors()), *specs);
}

TEST(WeightSpecsTest, DtypeNames) {
  EXPECT_EQ(*dtype_name(at::kBFloat16), "bf16");
  EXPECT_EQ(*dtype_name(at::kHalf), "f16");
  EXPECT_EQ(*dtype_name(at::kFloat), "f32");
  EXPECT_EQ(*dtype_from_name("f16"), at::kHalf);
  EXPECT_EQ(dtype_from_name("f64").status().code(), StatusCode::kInvalidArgument);
}

TEST(WeightSpecsTest, WireAndStagingTensorsAndCopyIn) {
  Qwen3LM from = random_lm(tiny_config(), 1);
  Qwen3LM to = random_lm(tiny_config(), 2);
  std::vector<at::Tensor> wire = wire_tensors(*from, at::kBFloat16);
  std::vector<at::Tensor> staging = staging_tensors(*to);
  ASSERT_EQ(wire.size(), staging.size());
  for (std::size_t i = 0; i < wire.size(); ++i) {
    EXPECT_EQ(wire[i].scalar_type(), at::kBFloat16);
    EXPECT_TRUE(wire[i].is_contiguous());
    EXPECT_EQ(staging[i].scalar_type(), at::kFloat);
    staging[i].copy_(wire[i]);  // what the broadcast does on a worker
  }
  ASSERT_TRUE(copy_into_model(staging, *to).ok());
  const auto a = hf_named_parameters(*from);
  const auto b = hf_named_parameters(*to);
  for (std::size_t i = 0; i < a.size(); ++i) {
    EXPECT_TRUE(at::equal(a[i].tensor.to(at::kBFloat16), b[i].tensor.to(at::kBFloat16)))
        << a[i].name;
  }
  staging.pop_back();
  EXPECT_EQ(copy_into_model(staging, *to).code(), StatusCode::kInvalidArgument);
}

TEST(WeightSpecsTest, CpuTensorsAreNotDeviceBuffers) {
  Qwen3LM lm = random_lm(tiny_config(), 1);
  auto buffers = device_buffers(staging_tensors(*lm));
  ASSERT_FALSE(buffers.ok());
  EXPECT_NE(buffers.status().message().find("broadcast tensor 0 is on cpu"), std::string::npos)
      << buffers.status().message();
}

}  // namespace
}  // namespace dice::weights
