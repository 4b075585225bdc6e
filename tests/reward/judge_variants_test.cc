// The broken-variant generator (reward/judge/judge_variants.h): which store it edits, and, over the
// 60 dev items, that every variant differs from its original and still parses as Python (a real
// python3 process runs ast.parse on them).
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include "common/remove_tree.h"
#include "reward/judge/judge.h"
#include "reward/judge/judge_variants.h"

namespace dice {
namespace {

constexpr const char* kFile = R"(import torch
source = """
__global__ void scale(const float* x, float* shared_out, int n) {
    // out[idx] = not a store: a comment
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx == n) return;
    shared_out[idx] += 1.0f;
}
__global__ void relu(const float* x, float* out, int n) {
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    float tile[4];
    tile[0] = x[idx];
    if (idx < n) out[idx] = fmaxf(tile[0], 0.0f);
}
torch::Tensor relu_cuda(torch::Tensor x) { auto out = torch::empty_like(x); return out; }
"""
)";

TEST(JudgeVariantsTest, EditsTheLastPlainStoreOfTheLastKernel) {
  const auto variants = broken_variants(kFile);
  ASSERT_EQ(variants.size(), 2u);
  EXPECT_EQ(variants[0].name, "wrong_value");
  EXPECT_NE(variants[0].source.find("out[idx] = (fmaxf(tile[0], 0.0f)) * 1.5f + 1.0f;"),
            std::string::npos)
      << variants[0].source;
  EXPECT_EQ(variants[1].name, "store_off_by_one");
  EXPECT_NE(variants[1].source.find("out[(idx) + 1] = fmaxf(tile[0], 0.0f);"), std::string::npos)
      << variants[1].source;
  EXPECT_NE(variants[0].edit.find("line 13"), std::string::npos) << variants[0].edit;
  // Everything else is untouched.
  EXPECT_NE(variants[1].source.find("tile[0] = x[idx];"), std::string::npos);
  EXPECT_NE(variants[1].source.find("shared_out[idx] += 1.0f;"), std::string::npos);
}

TEST(JudgeVariantsTest, NoKernelOrNoStoreGivesNoVariants) {
  EXPECT_TRUE(broken_variants("import torch\nx = torch.relu(y)\n").empty());
  EXPECT_TRUE(broken_variants("__global__ void k(float* o) { atomicAdd(o, 1.0f); }").empty());
  EXPECT_TRUE(broken_variants("__global__ void k(float* o) { if (o[0] == 1.0f) return; }").empty());
  EXPECT_TRUE(broken_variants("__global__ void k(float* o) { o[0] = 1; ").empty());  // unclosed
}

// The files of `sources` that python3's ast.parse rejects, with the error ("" when all parse);
// one python3 process for all of them.
std::string python_rejects(const std::vector<std::string>& sources) {
  const auto dir = std::filesystem::temp_directory_path() / "dice-judge-variants-parse";
  EXPECT_TRUE(remove_tree(dir).ok());
  std::filesystem::create_directories(dir);
  for (size_t i = 0; i < sources.size(); ++i) {
    std::ofstream(dir / (std::to_string(i) + ".py"), std::ios::binary) << sources[i];
  }
  const std::string command =
      "python3 -c 'import ast,glob,sys\nfor p in sorted(glob.glob(sys.argv[1] + \"/*.py\")):\n"
      "    try: ast.parse(open(p).read())\n    except SyntaxError as e: print(p, e)' " +
      dir.string() + " 2>&1";
  std::string output;
  FILE* pipe = popen(command.c_str(), "r");
  char buffer[512];
  while (pipe && fgets(buffer, sizeof buffer, pipe)) output += buffer;
  const int status = pipe ? pclose(pipe) : -1;
  EXPECT_TRUE(remove_tree(dir).ok());
  return status == 0 ? output : "python3 failed: " + output;
}

TEST(JudgeVariantsTest, DevItemsVariantsDifferAndParse) {
  const std::string path = DICE_RL_DATA_DIR "/kernel_infilling_dev.json";
  auto items = load_judge_items(path);
  if (!items.ok()) GTEST_SKIP() << "no dev data: " << items.status().to_string();
  std::vector<std::string> without;
  const auto candidates = with_variants(items.value(), true, &without);
  // 6936 only calls cuDNN: no kernel of its own, nothing to break.
  EXPECT_EQ(without, std::vector<std::string>{"6936"});
  EXPECT_EQ(candidates.size(), items->size() + 2 * (items->size() - 1));
  std::map<std::string, std::string> originals;
  std::vector<std::string> variants;
  for (const auto& c : candidates) {
    auto source = judged_source(c);
    ASSERT_TRUE(source.ok()) << c.id << " " << c.variant << ": " << source.status().to_string();
    if (c.variant == "original") {
      originals[c.id] = source.value();
      continue;
    }
    EXPECT_NE(source.value(), originals[c.id]) << c.id << " " << c.variant;
    EXPECT_FALSE(c.edit.empty());
    variants.push_back(source.value());
  }
  EXPECT_EQ(variants.size(), 2 * (items->size() - 1));
  EXPECT_EQ(python_rejects(variants), "");
}

}  // namespace
}  // namespace dice
