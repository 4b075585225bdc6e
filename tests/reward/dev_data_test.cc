// The 60 published infilling tasks (kernel_infilling_dev.json, REFERENCE.md section 7) through
// the CPU side of the pipeline: the core (middle) as a model response is spliced back between
// prefix and suffix; the whole file passes the static checks (except id 6936, which calls
// cuDNN and writes no kernel of its own); its load_inline sources read statically.
// The data file comes from DICE_DEV_DATA or the repository's data/dice-rl.
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "common/json/fields.h"
#include "reward/compile/compile.h"
#include "reward/extract.h"
#include "reward/static_check.h"

namespace dice {
namespace {

struct DevItem {
  std::string id, cuda_code, prefix, middle, suffix;
};

std::vector<DevItem> load_dev_items(std::string* why) {
  const char* env = std::getenv("DICE_DEV_DATA");
  std::string path = env ? env : DICE_RL_DATA_DIR "/kernel_infilling_dev.json";
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    *why = "no dev data at " + path + " (set DICE_DEV_DATA)";
    return {};
  }
  std::stringstream ss;
  ss << in.rdbuf();
  auto doc = parse_json(ss.str(), path);
  if (!doc.ok() || !doc->is_array()) {
    *why = "cannot read " + path;
    return {};
  }
  std::vector<DevItem> items;
  for (const auto& e : doc->get_array()) {
    DevItem item;
    item.id = json_id(e);
    item.cuda_code = json_string(e, "cuda_code");
    item.prefix = json_string(e, "prefix");
    item.middle = json_string(e, "middle");
    item.suffix = json_string(e, "suffix");
    items.push_back(std::move(item));
  }
  return items;
}

TEST(DevDataTest, SpliceStaticCheckAndSources) {
  std::string why;
  std::vector<DevItem> items = load_dev_items(&why);
  if (items.empty()) GTEST_SKIP() << why;
  EXPECT_EQ(items.size(), 60u);
  StaticCheckOptions check;
  check.python = "/usr/bin/python3";
  int flagged = 0;
  for (const auto& item : items) {
    ASSERT_EQ(item.prefix + item.middle + item.suffix, item.cuda_code) << item.id;
    // Phase 1: the model answers with the core only.
    ExtractedSource core =
        extract_candidate("```python\n" + item.middle + "\n```\n", item.prefix, item.suffix);
    ASSERT_EQ(core.failure, schema::FailureClass::NONE) << item.id << ": " << core.detail;
    EXPECT_EQ(core.source.rfind(item.prefix, 0), 0u) << item.id;
    EXPECT_EQ(core.source.substr(core.source.size() - item.suffix.size()), item.suffix) << item.id;
    // ... or with the whole file, skeleton unchanged.
    ExtractedSource full =
        extract_candidate("```python\n" + item.cuda_code + "\n```", item.prefix, item.suffix);
    EXPECT_EQ(full.failure, schema::FailureClass::NONE) << item.id << ": " << full.detail;

    auto result = run_static_check(core.source, check);
    ASSERT_TRUE(result.ok()) << item.id << ": " << result.status().to_string();
    if (item.id == "6936") {
      EXPECT_EQ(result->failure(), schema::FailureClass::STATIC_CHECK) << result->summary();
      ++flagged;
    } else {
      EXPECT_EQ(result->failure(), schema::FailureClass::NONE) << item.id << ":\n"
                                                               << result->summary();
    }
    auto sources = extract_extension_sources(core.source, "/usr/bin/python3",
                                             DICE_REWARD_PYTHON_DIR, SandboxSpec{});
    ASSERT_TRUE(sources.ok()) << item.id << ": " << sources.status().to_string();
    ASSERT_EQ(sources->size(), 1u) << item.id;
    EXPECT_FALSE(sources->front().cuda_sources.empty()) << item.id;
    EXPECT_FALSE(sources->front().functions.empty()) << item.id;
  }
  EXPECT_EQ(flagged, 1);
}

}  // namespace
}  // namespace dice
