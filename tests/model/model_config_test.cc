#include "model/checkpoint/model_config.h"

#include <gtest/gtest.h>

#include <limits>
#include <string>

namespace dice {
namespace {

// An SDAR-4B-like config.json as transformers 4 writes it.
const char kSdarConfig[] = R"({
  "architectures": ["SDARForCausalLM"], "model_type": "sdar",
  "vocab_size": 151936, "hidden_size": 2560, "intermediate_size": 9728,
  "num_hidden_layers": 36, "num_attention_heads": 32, "num_key_value_heads": 8,
  "head_dim": 128, "rms_norm_eps": 1e-06, "rope_theta": 1000000,
  "max_position_embeddings": 40960, "tie_word_embeddings": false, "rope_scaling": null,
  "attention_bias": false, "hidden_act": "silu", "torch_dtype": "bfloat16",
  "block_size": 4, "mask_token_id": 151669, "eos_token_id": 151645
})";

std::string with(const std::string& base, const std::string& from, const std::string& to) {
  std::string out = base;
  size_t at = out.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) out.replace(at, from.size(), to);
  return out;
}

void expect_error(const std::string& json, const std::string& needle) {
  auto c = parse_model_config(json, "m/config.json");
  ASSERT_FALSE(c.ok()) << needle;
  EXPECT_EQ(c.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(c.status().message().find("m/config.json"), std::string::npos)
      << c.status().to_string();
  EXPECT_NE(c.status().message().find(needle), std::string::npos) << c.status().to_string();
}

TEST(ModelConfigTest, ParsesSdarConfig) {
  auto c = parse_model_config(kSdarConfig, "m/config.json");
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_EQ(c->vocab_size, 151936);
  EXPECT_EQ(c->hidden_size, 2560);
  EXPECT_EQ(c->intermediate_size, 9728);
  EXPECT_EQ(c->num_hidden_layers, 36);
  EXPECT_EQ(c->num_attention_heads, 32);
  EXPECT_EQ(c->num_key_value_heads, 8);
  EXPECT_EQ(c->head_dim, 128);
  EXPECT_DOUBLE_EQ(c->rms_norm_eps, 1e-6);
  EXPECT_DOUBLE_EQ(c->rope_theta, 1e6);
  EXPECT_FALSE(c->tie_word_embeddings);
  EXPECT_EQ(c->block_size, 4);
  EXPECT_EQ(c->mask_token_id, 151669);
  EXPECT_EQ(c->dtype, "bfloat16");
}

TEST(ModelConfigTest, DefaultsFollowTransformers) {
  std::string json =
      with(with(kSdarConfig, R"("num_key_value_heads": 8,)", ""), R"("head_dim": 128,)", "");
  auto c = parse_model_config(json, "m/config.json");
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_EQ(c->num_key_value_heads, 32);  // = num_attention_heads
  EXPECT_EQ(c->head_dim, 2560 / 32);
}

TEST(ModelConfigTest, ReadsTransformers5RopeParameters) {
  std::string json = with(kSdarConfig, R"("rope_theta": 1000000,)",
                          R"("rope_parameters": {"rope_type": "default", "rope_theta": 5e5},)");
  auto c = parse_model_config(json, "m/config.json");
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_DOUBLE_EQ(c->rope_theta, 5e5);
}

TEST(ModelConfigTest, MissingAndIllTypedKeysNameFileAndKey) {
  expect_error(with(kSdarConfig, R"("hidden_size": 2560,)", ""),
               "key 'hidden_size': missing (required)");
  expect_error(with(kSdarConfig, R"("block_size": 4,)", ""), "key 'block_size': missing");
  expect_error(with(kSdarConfig, R"("hidden_size": 2560)", R"("hidden_size": "2560")"),
               "key 'hidden_size': expected an integer, got string");
  expect_error(with(kSdarConfig, R"("num_hidden_layers": 36)", R"("num_hidden_layers": 36.5)"),
               "key 'num_hidden_layers': expected an integer, got number");
  expect_error(with(kSdarConfig, R"("tie_word_embeddings": false)", R"("tie_word_embeddings": 0)"),
               "key 'tie_word_embeddings': expected true/false");
  expect_error(with(kSdarConfig, R"("rms_norm_eps": 1e-06)", R"("rms_norm_eps": "small")"),
               "key 'rms_norm_eps': expected a number");
  expect_error("{", "not valid JSON");
  expect_error("[]", "not a JSON object");
}

TEST(ModelConfigTest, InconsistentValuesAreErrors) {
  expect_error(with(kSdarConfig, R"("num_key_value_heads": 8)", R"("num_key_value_heads": 5)"),
               "does not divide num_attention_heads");
  expect_error(with(kSdarConfig, R"("mask_token_id": 151669)", R"("mask_token_id": 200000)"),
               "key 'mask_token_id': 200000 is outside the vocabulary");
  expect_error(with(kSdarConfig, R"("block_size": 4)", R"("block_size": 0)"),
               "key 'block_size': must be > 0");
}

// JSON numbers past the double range read as infinity (found by model_config_fuzz). An infinite
// epsilon or RoPE base is no model; and keys dice does not model are written back as they were
// (JsonRoundTripKeepsUnknownKeys), so one holding such a number made model_config_to_json write
// JSON that does not parse. Such a file is refused when read, naming the key; validate() refuses
// the same values in a config built in code.
TEST(ModelConfigTest, InfiniteNumbersAreErrors) {
  expect_error(with(kSdarConfig, R"("rms_norm_eps": 1e-06)", R"("rms_norm_eps": 1e706)"),
               "key 'rms_norm_eps': number out of range");
  expect_error(with(kSdarConfig, R"("rope_theta": 1000000)", R"("rope_theta": 1e999)"),
               "key 'rope_theta': number out of range");
  expect_error(
      with(kSdarConfig, R"("block_size": 4,)", R"("block_size": 4, "extra": [1, 4e5096],)"),
      "key 'extra[1]': number out of range");
  expect_error(with(kSdarConfig, R"("block_size": 4,)", R"("block_size": 4, "a": {"b": -1e400},)"),
               "key 'a.b': number out of range");

  auto c = parse_model_config(kSdarConfig, "m/config.json");
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  c->rope_theta = std::numeric_limits<double>::infinity();
  EXPECT_NE(c->validate("m").message().find("must be finite and > 0"), std::string::npos);
}

TEST(ModelConfigTest, UnsupportedArchitectureSwitchesAreRejected) {
  expect_error(with(kSdarConfig, R"("rope_scaling": null)",
                    R"("rope_scaling": {"rope_type": "yarn", "factor": 4.0})"),
               "key 'rope_scaling.rope_type': rope type 'yarn' is not supported");
  expect_error(with(kSdarConfig, R"("attention_bias": false)", R"("attention_bias": true)"),
               "key 'attention_bias'");
  expect_error(with(kSdarConfig, R"("hidden_act": "silu")", R"("hidden_act": "gelu")"),
               "key 'hidden_act'");
}

TEST(ModelConfigTest, JsonRoundTripKeepsUnknownKeys) {
  auto c = parse_model_config(kSdarConfig, "m/config.json");
  ASSERT_TRUE(c.ok());
  c->num_hidden_layers = 2;
  std::string text = model_config_to_json(*c);
  auto back = parse_model_config(text, "out/config.json");
  ASSERT_TRUE(back.ok()) << back.status().to_string() << "\n" << text;
  EXPECT_EQ(back->num_hidden_layers, 2);
  EXPECT_EQ(back->num_key_value_heads, 8);
  EXPECT_DOUBLE_EQ(back->rope_theta, 1e6);
  EXPECT_EQ(back->mask_token_id, 151669);
  EXPECT_NE(text.find("\"eos_token_id\":151645"), std::string::npos) << text;
  EXPECT_NE(text.find("SDARForCausalLM"), std::string::npos) << text;

  ModelConfig fresh = *c;
  fresh.source_json.clear();
  std::string fresh_text = model_config_to_json(fresh);
  EXPECT_NE(fresh_text.find("\"model_type\":\"qwen3\""), std::string::npos) << fresh_text;
  EXPECT_NE(fresh_text.find("Qwen3ForCausalLM"), std::string::npos) << fresh_text;
}

}  // namespace
}  // namespace dice
