// The normalisation under which dice-data build-sft counts two pairs as one
// (tools/dice-data/source_norm.h): comments and white space count for nothing, code does.
#include "tools/dice-data/source_norm.h"

#include <gtest/gtest.h>

#include <string>

#include "tests/tools/dice_data_test_util.h"

namespace dice::data {
namespace {

// kCandidate with other comments, indentation, spacing and line breaks, in Python and in CUDA.
const char kReformatted[] = R"PY(import torch
import torch.nn as nn   # the module
from torch.utils.cpp_extension import load_inline



source = """
// writes one
__global__ void k(float* x)
{
    x[0] = 1;   /* the only element */
}
torch::Tensor f(torch::Tensor x) {
  k<<<1,1>>>(x.data_ptr<float>());
  return x;
}
"""

cpp_src = "torch::Tensor f(torch::Tensor x);"  # declarations

ext = load_inline(name="ext", cpp_sources=cpp_src,
                  cuda_sources=source, functions=["f"],)


class ModelNew(nn.Module):
    # forward calls the kernel
    def forward(self, x):
        return ext.f(x)
)PY";

TEST(DiceDataSourceNormTest, CommentsAndWhiteSpaceCountForNothing) {
  EXPECT_EQ(normalized_source(testing::kCandidate), normalized_source(kReformatted));
  EXPECT_EQ(normalized_source("x=a+b  # sum\n"), normalized_source("x = a + b\n"));
  EXPECT_EQ(normalized_source("x = 'a  b'"), normalized_source("x = \"a b\""));
  EXPECT_EQ(normalized_c_text("int  x ;// c\n/* d */ y"), "int x;y");
}

TEST(DiceDataSourceNormTest, CodeCounts) {
  const std::string base = normalized_source(testing::kCandidate);
  std::string other = testing::kCandidate;
  other.replace(other.find("x[0] = 1"), 8, "x[0] = 2");
  EXPECT_NE(normalized_source(other), base);  // another constant in the kernel
  other = testing::kCandidate;
  other.replace(other.find("k<<<1, 1>>>"), 11, "k<<<1, 2>>>");
  EXPECT_NE(normalized_source(other), base);  // another launch
  EXPECT_NE(normalized_source("y = a + b"), normalized_source("x = a + b"));
  // White space between two words separates them; inside a C string it is kept.
  EXPECT_NE(normalized_c_text("unsigned int x"), normalized_c_text("unsignedint x"));
  EXPECT_EQ(normalized_c_text("printf(\"a  b // c\");"), "printf(\"a  b // c\");");
  // A preprocessor line is code, not a Python comment, inside the CUDA string.
  EXPECT_NE(normalized_source("s = \"\"\"#include <cuda.h>\nint x;\"\"\""),
            normalized_source("s = \"\"\"int x;\"\"\""));
}

TEST(DiceDataSourceNormTest, AFileThatDoesNotTokenizeIsNormalisedWhole) {
  EXPECT_EQ(normalized_source("x = (1,\n  2"), normalized_source("x=(1,2"));
  EXPECT_NE(normalized_source("x = (1,\n  2"), normalized_source("x=(1,3"));
}

TEST(DiceDataSourceNormTest, PairKeysAndTheFirstOfEach) {
  const std::string a = normalized_pair_key("ref", testing::kCandidate);
  EXPECT_EQ(a, normalized_pair_key("ref  # r", kReformatted));
  EXPECT_NE(a, normalized_pair_key("ref2", testing::kCandidate));
  // The reference and the candidate are separate parts: text moved between them is another pair.
  EXPECT_NE(normalized_pair_key("a", "b c"), normalized_pair_key("a b", "c"));
  EXPECT_EQ(first_of_each({"k1", "k2", "k1", "k3", "k2", "k1"}),
            (std::vector<long>{-1, -1, 0, -1, 1, 0}));
}

}  // namespace
}  // namespace dice::data
