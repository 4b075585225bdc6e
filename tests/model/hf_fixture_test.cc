// dice's model against logits computed by Hugging Face transformers for the same tiny model
// (tests/model/fixtures/hf_tiny, written by tools/verify-model/make_reference.py --preset ci).
#include <gtest/gtest.h>
#include <sys/stat.h>

#include "model/weights.h"
#include "tools/verify-model/reference_check.h"

namespace dice {
namespace {

const std::string kFixture = DICE_MODEL_FIXTURE_DIR "/hf_tiny";

TEST(HfFixtureTest, LogitsMatchTransformers) {
  struct stat st {};
  if (::stat((kFixture + "/reference.safetensors").c_str(), &st) != 0) {
    GTEST_SKIP() << "fixture " << kFixture << " is absent; generate it on a machine with torch "
                 << "and transformers: python3 tools/verify-model/make_reference.py --preset ci "
                 << "--out tests/model/fixtures/hf_tiny";
  }
  auto reference = read_reference_logits(kFixture + "/reference.safetensors");
  ASSERT_TRUE(reference.ok()) << reference.status().to_string();
  auto lm = load_qwen3_lm(kFixture + "/model");
  ASSERT_TRUE(lm.ok()) << lm.status().to_string();
  auto rows = compare_with_reference(**lm, *reference, "float32");
  ASSERT_EQ(rows.size(), 3u);
  for (const auto& row : rows) EXPECT_TRUE(row.passed()) << format_comparisons(rows);
  // The references are not trivially small: a wrong mask or RoPE would show.
  EXPECT_GT(rows[0].max_abs_ref, 0.5);
}

}  // namespace
}  // namespace dice
