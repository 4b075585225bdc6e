#include "reward/extract.h"

#include <gtest/gtest.h>

namespace dice {
namespace {

using FC = schema::FailureClass;

constexpr char kPrefix[] =
    "import torch\nimport torch.nn as nn\nfrom torch.utils.cpp_extension import load_inline\n\n";
constexpr char kSuffix[] =
    "\n\ncpp_src = \"torch::Tensor f(torch::Tensor x);\"\n\n"
    "ext = load_inline(name='ext', cpp_sources=cpp_src, cuda_sources=source, functions=['f'])\n\n\n"
    "class ModelNew(nn.Module):\n"
    "    def forward(self, x):\n"
    "        return ext.f(x)\n";
constexpr char kCore[] = "source = \"\"\"\n__global__ void k() {}\n\"\"\"\n";

TEST(FirstCodeBlockTest, TakesPythonBlock) {
  FencedBlock b = first_code_block("Here:\n```python\nx = 1\n```\nDone.");
  EXPECT_TRUE(b.found);
  EXPECT_TRUE(b.closed);
  EXPECT_EQ(b.language, "python");
  EXPECT_EQ(b.body, "x = 1\n");
}

TEST(FirstCodeBlockTest, AcceptsPyAndBareFences) {
  EXPECT_EQ(first_code_block("```py\na\n```").body, "a\n");
  EXPECT_EQ(first_code_block("```\nb\n```").body, "b\n");
  EXPECT_EQ(first_code_block("```Python3\nc\n```").body, "c\n");
}

TEST(FirstCodeBlockTest, PrefersFirstPythonBlockOverEarlierCudaBlock) {
  FencedBlock b = first_code_block("```cpp\nint x;\n```\ntext\n```python\ny = 2\n```\n");
  EXPECT_EQ(b.language, "python");
  EXPECT_EQ(b.body, "y = 2\n");
}

TEST(FirstCodeBlockTest, FallsBackToFirstBlockOfAnyLanguage) {
  FencedBlock b = first_code_block("```cuda\n__global__ void k();\n```\n```cpp\nint y;\n```");
  EXPECT_TRUE(b.found);
  EXPECT_EQ(b.language, "cuda");
  EXPECT_EQ(b.body, "__global__ void k();\n");
}

TEST(FirstCodeBlockTest, OnlyTheFirstPythonBlock) {
  FencedBlock b = first_code_block("```python\nfirst\n```\n```python\nsecond\n```\n");
  EXPECT_EQ(b.body, "first\n");
}

TEST(FirstCodeBlockTest, MissingClosingFenceRunsToEnd) {
  FencedBlock b = first_code_block("```python\nx = 1\ny = 2");
  EXPECT_TRUE(b.found);
  EXPECT_FALSE(b.closed);
  EXPECT_EQ(b.body, "x = 1\ny = 2\n");
}

TEST(FirstCodeBlockTest, InfoStringWithAttributes) {
  FencedBlock b = first_code_block("```python title=\"a.py\"\nz\n```");
  EXPECT_EQ(b.language, "python");
  EXPECT_EQ(b.body, "z\n");
}

TEST(FirstCodeBlockTest, IndentedFenceUpToThreeSpaces) {
  EXPECT_TRUE(first_code_block("   ```python\nq\n   ```").found);
  EXPECT_FALSE(first_code_block("    ```python\nq\n    ```").found);
}

TEST(FirstCodeBlockTest, InlineBackticksAreNotFences) {
  EXPECT_FALSE(first_code_block("use `x` and ``y`` here").found);
  EXPECT_FALSE(first_code_block("text ```python inline``` text").found);
}

TEST(FirstCodeBlockTest, LongerFencesAndCrLf) {
  FencedBlock b = first_code_block("````python\r\nw = 1\r\n````\r\n");
  EXPECT_TRUE(b.found);
  EXPECT_EQ(b.body, "w = 1\r\n");
}

TEST(ExtractCandidateTest, NoBlockIsNoCodeBlock) {
  EXPECT_EQ(extract_candidate("I cannot do that.", "", "").failure, FC::NO_CODE_BLOCK);
  EXPECT_EQ(extract_candidate("", "", "").failure, FC::NO_CODE_BLOCK);
}

TEST(ExtractCandidateTest, EmptyBlockIsNoCodeBlock) {
  EXPECT_EQ(extract_candidate("```python\n\n   \n```", "", "").failure, FC::NO_CODE_BLOCK);
}

TEST(ExtractCandidateTest, EndToEndTakesTheBlockAsTheFile) {
  ExtractedSource e =
      extract_candidate("Sure.\n```python\nimport torch\nclass ModelNew: pass\n```", "", "");
  EXPECT_EQ(e.failure, FC::NONE);
  EXPECT_EQ(e.source, "import torch\nclass ModelNew: pass\n");
}

TEST(ExtractCandidateTest, InfillSplicesCoreBetweenPrefixAndSuffix) {
  ExtractedSource e =
      extract_candidate(std::string("```python\n") + kCore + "```\n", kPrefix, kSuffix);
  ASSERT_EQ(e.failure, FC::NONE) << e.detail;
  EXPECT_EQ(e.source, std::string(kPrefix) + kCore + kSuffix);
}

TEST(ExtractCandidateTest, InfillWithoutClosingFence) {
  ExtractedSource e = extract_candidate(std::string("```python\n") + kCore, kPrefix, kSuffix);
  ASSERT_EQ(e.failure, FC::NONE) << e.detail;
  EXPECT_EQ(e.source, std::string(kPrefix) + kCore + kSuffix);
}

TEST(ExtractCandidateTest, InfillFullFileWithUnchangedSkeletonIsAccepted) {
  std::string full = std::string(kPrefix) + kCore + kSuffix;
  ExtractedSource e = extract_candidate("```python\n" + full + "```", kPrefix, kSuffix);
  ASSERT_EQ(e.failure, FC::NONE) << e.detail;
  EXPECT_EQ(e.source, full);
}

TEST(ExtractCandidateTest, InfillFullFileToleratesTrailingSpaces) {
  std::string full = std::string(kPrefix) + kCore + kSuffix;
  std::string spaced;
  for (char c : full) {
    if (c == '\n') spaced += "  ";
    spaced += c;
  }
  ExtractedSource e = extract_candidate("```python\n" + spaced + "```", kPrefix, kSuffix);
  ASSERT_EQ(e.failure, FC::NONE) << e.detail;
  EXPECT_EQ(e.source, full);
}

TEST(ExtractCandidateTest, InfillCoreAfterRepeatedImports) {
  std::string block = std::string(kPrefix) + kCore;
  ExtractedSource e = extract_candidate("```python\n" + block + "```", kPrefix, kSuffix);
  ASSERT_EQ(e.failure, FC::NONE) << e.detail;
  EXPECT_EQ(e.source, std::string(kPrefix) + kCore + kSuffix);
}

TEST(ExtractCandidateTest, InfillAlteredSuffixIsSkeletonAltered) {
  std::string suffix = kSuffix;
  std::string altered = suffix;
  altered.replace(altered.find("return ext.f(x)"), 15, "return torch.relu(x)");
  std::string full = std::string(kPrefix) + kCore + altered;
  ExtractedSource e = extract_candidate("```python\n" + full + "```", kPrefix, kSuffix);
  EXPECT_EQ(e.failure, FC::SKELETON_ALTERED);
}

TEST(ExtractCandidateTest, InfillCoreRedefiningModelNewIsSkeletonAltered) {
  std::string block = std::string(kCore) + "class ModelNew(nn.Module):\n    pass\n";
  ExtractedSource e = extract_candidate("```python\n" + block + "```", kPrefix, kSuffix);
  EXPECT_EQ(e.failure, FC::SKELETON_ALTERED);
}

TEST(ExtractCandidateTest, InfillExtraCodeAfterSuffixIsSkeletonAltered) {
  std::string full = std::string(kPrefix) + kCore + kSuffix + "\nModelNew.forward = None\n";
  ExtractedSource e = extract_candidate("```python\n" + full + "```", kPrefix, kSuffix);
  EXPECT_EQ(e.failure, FC::SKELETON_ALTERED);
}

TEST(ExtractCandidateTest, InfillOnlyImportsIsNoCore) {
  ExtractedSource e =
      extract_candidate(std::string("```python\n") + kPrefix + "```", kPrefix, kSuffix);
  EXPECT_EQ(e.failure, FC::NO_CODE_BLOCK);
}

}  // namespace
}  // namespace dice
