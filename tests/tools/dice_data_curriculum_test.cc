// dice-data curriculum (tools/dice-data): what the generated files hold, checked on the files'
// text as the learner and dice-judge will read it.
#include "tools/dice-data/curriculum.h"

#include <gtest/gtest.h>

#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "tests/tools/dice_data_test_util.h"
#include "tools/dice-data/curriculum_writer.h"

namespace dice::data {
namespace {

using testing::cuda_source_of;
using testing::function_bodies;
using testing::json_items;
using testing::str;

CurriculumOptions small_options() {
  CurriculumOptions o;
  o.seed = 7;
  o.sft_pairs = 90;
  o.rl_tasks_per_level = 12;
  o.heldout_per_level = 9;
  return o;
}

std::map<std::string, std::string> files_of(const Curriculum& c) {
  std::map<std::string, std::string> out;
  for (auto& [name, text] : curriculum_files(c)) out[name] = text;
  return out;
}

// Every pair of the curriculum with the file it is in.
std::vector<std::pair<std::string, const KernelPair*>> all_pairs(const Curriculum& c) {
  std::vector<std::pair<std::string, const KernelPair*>> out;
  for (const auto& item : c.sft) out.emplace_back("sft.json", &item.pair);
  for (const auto& p : c.rl_infill) out.emplace_back("rl_infill.json", &p);
  for (const auto& p : c.rl_e2e) out.emplace_back("rl_e2e.json", &p);
  for (const auto& p : c.heldout_infill) out.emplace_back("heldout_infill.json", &p);
  for (const auto& p : c.heldout_e2e) out.emplace_back("heldout_e2e.json", &p);
  for (const auto& p : c.heldout_indist_infill) out.emplace_back("heldout_indist_infill.json", &p);
  for (const auto& p : c.heldout_indist_e2e) out.emplace_back("heldout_indist_e2e.json", &p);
  return out;
}

// The out-of-distribution held-out files (the in-distribution ones are built on training keys).
bool out_of_distribution(const std::string& file) {
  return file == "heldout_infill.json" || file == "heldout_e2e.json";
}

TEST(DiceDataCurriculumTest, SameSeedGivesSameBytesAndAnotherSeedDifferent) {
  CurriculumOptions o;  // the defaults, as the CLI runs them
  const auto a = files_of(generate_curriculum(o));
  const auto b = files_of(generate_curriculum(o));
  EXPECT_EQ(a, b);
  o.seed = 2;
  const auto c = files_of(generate_curriculum(o));
  ASSERT_EQ(a.size(), c.size());
  for (const auto& [name, text] : a) EXPECT_NE(text, c.at(name)) << name;
}

TEST(DiceDataCurriculumTest, MoreSftPairsLeaveTheRlTasksAsTheyAre) {
  // Each item draws from a generator of its own (prng.h: item_seed).
  CurriculumOptions o = small_options();
  const auto a = files_of(generate_curriculum(o));
  o.sft_pairs = 30;
  const auto b = files_of(generate_curriculum(o));
  EXPECT_NE(a.at("sft.json"), b.at("sft.json"));
  // Ids count per family over all files, so compare the tasks without their ids.
  const Curriculum many = generate_curriculum(small_options());
  const Curriculum few = generate_curriculum(o);
  ASSERT_EQ(many.rl_e2e.size(), few.rl_e2e.size());
  for (std::size_t i = 0; i < many.rl_e2e.size(); ++i) {
    EXPECT_EQ(many.rl_e2e[i].pytorch_code, few.rl_e2e[i].pytorch_code);
    EXPECT_EQ(many.rl_e2e[i].cuda_code(), few.rl_e2e[i].cuda_code());
  }
}

// --names fixed: the same tasks, shapes and layouts as the varied curriculum of the seed, with
// each kernel named <label>_kernel and launched under that name, the source string cuda_source.
TEST(DiceDataCurriculumTest, FixedNamesKeepTheTasksAndNameEveryKernelAlike) {
  CurriculumOptions o = small_options();
  const Curriculum varied = generate_curriculum(o);
  o.names = Variety::kFixed;
  const Curriculum fixed = generate_curriculum(o);
  const auto a = all_pairs(varied), b = all_pairs(fixed);
  ASSERT_EQ(a.size(), b.size());
  int differ = 0;
  const std::regex defined(R"(__global__ void (\w+)\()"), launched(R"((\w+)<<<)");
  for (std::size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].second->id, b[i].second->id);
    EXPECT_EQ(a[i].second->pytorch_code, b[i].second->pytorch_code) << b[i].second->id;
    differ += a[i].second->cuda_code() != b[i].second->cuda_code();
    const std::string code = b[i].second->cuda_code();
    EXPECT_NE(code.find("cuda_source = "), std::string::npos) << b[i].second->id;
    std::smatch def, launch;
    ASSERT_TRUE(std::regex_search(code, def, defined)) << b[i].second->id;
    ASSERT_TRUE(std::regex_search(code, launch, launched)) << b[i].second->id;
    EXPECT_EQ(def[1], launch[1]) << b[i].second->id;
    EXPECT_EQ(def[1].str().substr(def[1].length() - 7), "_kernel") << b[i].second->id;
  }
  EXPECT_GT(differ, static_cast<int>(a.size()) / 2);  // most varied pairs drew other names
  EXPECT_NE(files_of(fixed).at("MANIFEST.json").find("\"names\": \"fixed\""), std::string::npos);
}

// The lines of every candidate that hold `needle`, as a set.
std::set<std::string> lines_with(const Curriculum& c, const std::string& needle) {
  std::set<std::string> out;
  for (const auto& [kind, pair] : all_pairs(c)) {
    std::istringstream in(pair->cuda_code());
    for (std::string line; std::getline(in, line);) {
      if (line.find(needle) != std::string::npos) out.insert(line);
    }
  }
  return out;
}

// --layout fixed: the same tasks as the varied curriculum of the seed (shapes may differ: the
// sizes a kernel is checked at follow its threads per block), each answer in one layout: one
// launch configuration, one way to name the module, no layout-only keywords.
TEST(DiceDataCurriculumTest, FixedLayoutKeepsTheTasksAndWritesOneForm) {
  CurriculumOptions o = small_options();
  o.names = Variety::kFixed;
  const Curriculum names_only = generate_curriculum(o);
  o.layout = Variety::kFixed;
  const Curriculum fixed = generate_curriculum(o);
  const auto a = all_pairs(names_only), b = all_pairs(fixed);
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    // The same task (the reference's own layout follows the style too: annotations, super()).
    EXPECT_EQ(a[i].second->id, b[i].second->id);
    EXPECT_EQ(a[i].second->op, b[i].second->op) << b[i].second->id;
    EXPECT_EQ(a[i].second->dtype, b[i].second->dtype) << b[i].second->id;
    EXPECT_EQ(a[i].second->keys, b[i].second->keys) << b[i].second->id;
    const std::string code = b[i].second->cuda_code();
    for (const char* layout_only : {"__restrict__", "extern __shared__", "cuda_runtime.h",
                                    "__device__ __forceinline__", "verbose="}) {
      EXPECT_EQ(code.find(layout_only), std::string::npos)
          << layout_only << " in " << b[i].second->id;
    }
  }
  EXPECT_EQ(lines_with(fixed, "int threads = ").size(), 1u);
  EXPECT_GT(lines_with(names_only, "int threads = ").size(), 1u);
  EXPECT_EQ(lines_with(fixed, "name=").size(), lines_with(fixed, "name=\"").size());
  EXPECT_LT(lines_with(names_only, "name=\"").size(), lines_with(names_only, "name=").size());
  EXPECT_NE(files_of(fixed).at("MANIFEST.json").find("\"layout\": \"fixed\""), std::string::npos);
}

TEST(DiceDataCurriculumTest, CountsAndLevelsAreAsAsked) {
  const CurriculumOptions o = small_options();
  const auto files = files_of(generate_curriculum(o));
  const auto sft = json_items(files.at("sft.json"), "sft.json");
  ASSERT_EQ(sft.size(), 90u);
  std::map<std::string, int> sft_levels;
  int infill = 0;
  for (const auto& item : sft) {
    ++sft_levels[str(item, "level")];
    const bool is_infill = item.contains("middle");
    infill += is_infill ? 1 : 0;
    // Exactly the fields the brief names for each kind.
    EXPECT_EQ(item.size(), is_infill ? 6u : 4u);
    EXPECT_EQ(is_infill, !item.contains("cuda_code"));
  }
  EXPECT_EQ(infill, 45);
  EXPECT_EQ(sft_levels, (std::map<std::string, int>{{"1", 30}, {"2", 30}, {"3", 30}}));

  for (const auto& [name, per_level] :
       std::vector<std::pair<std::string, int>>{{"rl_infill.json", 12},
                                                {"rl_e2e.json", 12},
                                                {"heldout_infill.json", 9},
                                                {"heldout_e2e.json", 9},
                                                {"heldout_indist_infill.json", 9},
                                                {"heldout_indist_e2e.json", 9}}) {
    const auto tasks = json_items(files.at(name), name);
    ASSERT_EQ(tasks.size(), static_cast<std::size_t>(3 * per_level)) << name;
    const bool infill_file = name.find("infill") != std::string::npos;
    std::string last = "0";
    for (const auto& t : tasks) {
      const std::string level = str(t, "level");
      EXPECT_GE(level, last) << name << ": not sorted by level (sequential select walks it)";
      last = level;
      EXPECT_EQ(t.size(), infill_file ? 9u : 6u) << name;
      for (const char* key :
           {"id", "level", "op_key", "pytorch_code", "cuda_code", "shape_variants"})
        EXPECT_TRUE(t.contains(key)) << name << ": " << key;
      if (infill_file) {
        for (const char* key : {"prefix", "middle", "suffix"})
          EXPECT_TRUE(t.contains(key)) << name << ": " << key;
      }
    }
  }
}

TEST(DiceDataCurriculumTest, IdsAreUniqueAndNameFamilyAndLevel) {
  const Curriculum c = generate_curriculum(small_options());
  std::set<std::string> ids;
  const std::regex form("(unary|binary|chain|reduce|norm)-([123])-[0-9]+");
  for (const auto& [file, p] : all_pairs(c)) {
    EXPECT_TRUE(ids.insert(p->id).second) << "id used twice: " << p->id;
    std::smatch m;
    ASSERT_TRUE(std::regex_match(p->id, m, form)) << p->id;
    EXPECT_EQ(m[1].str(), p->family);
    EXPECT_EQ(m[2].str(), p->level);
  }
  // verify_items.json: every pair exactly once.
  const auto verify = json_items(files_of(c).at("verify_items.json"), "verify_items.json");
  std::set<std::string> verify_ids;
  for (const auto& item : verify) {
    EXPECT_EQ(item.size(), 4u);
    verify_ids.insert(str(item, "id"));
  }
  EXPECT_EQ(verify.size(), ids.size());
  EXPECT_EQ(verify_ids, ids);
}

TEST(DiceDataCurriculumTest, EveryFamilyOpAndDtypeOccurs) {
  const Curriculum c = generate_curriculum(CurriculumOptions{});
  std::set<std::string> families, dtypes, unary;
  for (const auto& item : c.sft) {
    families.insert(item.pair.family);
    dtypes.insert(item.pair.dtype);
    if (item.pair.family == "unary") unary.insert(item.pair.op);
  }
  EXPECT_EQ(families, (std::set<std::string>{"unary", "binary", "chain", "reduce", "norm"}));
  EXPECT_EQ(dtypes, (std::set<std::string>{"float32", "float16", "bfloat16"}));
  EXPECT_EQ(unary.size(), 17u);
}

TEST(DiceDataCurriculumTest, CandidatesAreSplitAsDiceSplitsThem) {
  const auto files = files_of(generate_curriculum(small_options()));
  const std::string imports =
      "import torch\nimport torch.nn as nn\nfrom torch.utils.cpp_extension import load_inline\n\n";
  int checked = 0;
  for (const char* name : {"rl_infill.json", "heldout_infill.json", "sft.json"}) {
    for (const auto& t : json_items(files.at(name), name)) {
      if (!t.contains("middle")) continue;
      const std::string prefix = str(t, "prefix"), middle = str(t, "middle"),
                        suffix = str(t, "suffix");
      if (t.contains("cuda_code")) {
        EXPECT_EQ(str(t, "cuda_code"), prefix + middle + suffix);
      }
      // Prefix: the imports, then a blank line or one comment line.
      ASSERT_EQ(prefix.rfind(imports, 0), 0u) << str(t, "id");
      const std::string rest = prefix.substr(imports.size());
      EXPECT_TRUE(rest == "\n" || std::regex_match(rest, std::regex("# [^\n]+\n"))) << rest;
      // Middle: one assignment of one triple-quoted string holding the kernels and launchers.
      const auto eq = middle.find(" = \"\"\"\n");
      ASSERT_NE(eq, std::string::npos) << str(t, "id");
      const std::string var = middle.substr(0, eq);
      EXPECT_TRUE(std::regex_match(var, std::regex("[A-Za-z_][A-Za-z0-9_]*"))) << var;
      ASSERT_GE(middle.size(), eq + 8);
      EXPECT_EQ(middle.substr(middle.size() - 3), "\"\"\"");
      const std::string src = middle.substr(eq + 7, middle.size() - eq - 10);
      EXPECT_EQ(src.find("\"\"\""), std::string::npos) << str(t, "id");
      EXPECT_NE(src.find("#include <torch/extension.h>"), std::string::npos);
      EXPECT_NE(src.find("__global__ void "), std::string::npos);
      EXPECT_NE(src.find("<<<"), std::string::npos);
      EXPECT_NE(src.find("torch::Tensor "), std::string::npos);
      // Suffix: declarations, load_inline over that very string, ModelNew.
      EXPECT_EQ(suffix.rfind("\n\n", 0), 0u);
      EXPECT_NE(suffix.find("load_inline("), std::string::npos);
      EXPECT_NE(suffix.find("cuda_sources=" + var + ","), std::string::npos);
      EXPECT_NE(suffix.find("class ModelNew(nn.Module):"), std::string::npos);
      EXPECT_EQ(suffix.find("__global__"), std::string::npos);
      ++checked;
    }
  }
  EXPECT_EQ(checked, 36 + 27 + 45);
}

TEST(DiceDataCurriculumTest, KernelsKeepToWhatTheSplitBuildAccepts) {
  // reward/split_sources.h: device code without torch/at/c10 names, no templates, overloads,
  // preprocessor conditionals, macros or namespaces; launch configurations without "<" / ">".
  const Curriculum c = generate_curriculum(small_options());
  for (const auto& [file, p] : all_pairs(c)) {
    const std::string src = cuda_source_of(p->middle);
    ASSERT_FALSE(src.empty()) << p->id;
    for (const char* banned : {"template", "#if", "#define", "namespace", "extern \"C\""})
      EXPECT_EQ(src.find(banned), std::string::npos) << p->id << ": " << banned;
    for (const char* macro : {"TORCH_", "AT_", "C10_"})
      EXPECT_FALSE(std::regex_search(src, std::regex(std::string("\\b") + macro)))
          << p->id << ": " << macro;
    for (const char* q : {"__global__", "__device__"}) {
      for (const auto& body : function_bodies(src, q)) {
        for (const char* ns : {"torch::", "at::", "c10::"})
          EXPECT_EQ(body.find(ns), std::string::npos) << p->id << ": " << ns << " in " << body;
      }
    }
    std::set<std::string> kernels;
    const std::regex kernel("__global__ void ([A-Za-z_0-9]+)\\(");
    for (auto it = std::sregex_iterator(src.begin(), src.end(), kernel);
         it != std::sregex_iterator(); ++it)
      EXPECT_TRUE(kernels.insert((*it)[1].str()).second) << p->id << ": overloaded kernel";
    EXPECT_FALSE(kernels.empty()) << p->id;
    for (auto at = src.find("<<<"); at != std::string::npos; at = src.find("<<<", at + 3)) {
      const auto end = src.find(">>>", at);
      ASSERT_NE(end, std::string::npos) << p->id;
      const std::string config = src.substr(at + 3, end - at - 3);
      EXPECT_EQ(config.find_first_of("<>"), std::string::npos) << p->id << ": " << config;
    }
    // A fixed shared array must hold one float per thread of the launch.
    std::smatch m;
    if (std::regex_search(src, m, std::regex("__shared__ float [a-z]+\\[([0-9]+)\\]"))) {
      EXPECT_NE(src.find(" = " + m[1].str() + ";"), std::string::npos) << p->id;
    }
    // Plain CUDA element types only, with the header each needs.
    if (src.find("__half") != std::string::npos) {
      EXPECT_NE(src.find("#include <cuda_fp16.h>"), std::string::npos) << p->id;
    }
    if (src.find("__nv_bfloat16") != std::string::npos) {
      EXPECT_NE(src.find("#include <cuda_bf16.h>"), std::string::npos) << p->id;
    }
  }
}

// The names a reference's get_init_inputs() returns.
std::vector<std::string> init_input_names(const std::string& code) {
  const std::string head = "def get_init_inputs():\n    return [";
  const auto at = code.find(head);
  if (at == std::string::npos) return {};
  const std::string list = code.substr(at + head.size(), code.find(']', at) - at - head.size());
  std::vector<std::string> out;
  const std::regex name("[A-Za-z_][A-Za-z0-9_]*");
  for (auto it = std::sregex_iterator(list.begin(), list.end(), name); it != std::sregex_iterator();
       ++it)
    out.push_back(it->str());
  return out;
}

TEST(DiceDataCurriculumTest, ReferencesAreKernelBenchProblemsWithInputOnlyShapeVariants) {
  const Curriculum c = generate_curriculum(small_options());
  for (const auto& [file, p] : all_pairs(c)) {
    const std::string& code = p->pytorch_code;
    for (const char* part :
         {"import torch\n", "import torch.nn as nn\n", "class Model(nn.Module):\n",
          "    def forward(self, x", "def get_inputs():\n", "def get_init_inputs():\n"})
      EXPECT_NE(code.find(part), std::string::npos) << p->id << ": " << part;
    EXPECT_NE(code.find("torch.randn("), std::string::npos) << p->id;
    // ModelNew takes the constructor arguments Model takes.
    const std::regex init("def __init__\\(self([^)]*)\\):");
    std::smatch ref_init, new_init;
    ASSERT_TRUE(std::regex_search(code, ref_init, init)) << p->id;
    ASSERT_TRUE(std::regex_search(p->suffix, new_init, init)) << p->id;
    EXPECT_EQ(ref_init[1].str(), new_init[1].str()) << p->id;

    ASSERT_GE(p->shape_variants.size(), 2u) << p->id;
    ASSERT_LE(p->shape_variants.size(), 3u) << p->id;
    const auto init_names = init_input_names(code);
    // One variant is larger than the task's own shape: a kernel with the task's sizes written
    // into it fails there rather than passing on smaller shapes only.
    bool larger = false;
    for (const auto& variant : p->shape_variants)
      for (const auto& [name, value] : variant) {
        std::smatch own;
        if (std::regex_search(code, own, std::regex("\n" + name + " = ([0-9]+)\n")))
          larger = larger || value > std::stoll(own[1].str());
      }
    EXPECT_TRUE(larger) << p->id;
    for (const auto& variant : p->shape_variants) {
      ASSERT_FALSE(variant.empty());
      for (const auto& [name, value] : variant) {
        EXPECT_GE(value, 1) << p->id;
        EXPECT_TRUE(std::regex_search(code, std::regex("\n" + name + " = [0-9]+\n")))
            << p->id << ": " << name << " is no module-level integer";
        for (const auto& n : init_names)
          EXPECT_NE(n, name) << p->id << ": the variant changes get_init_inputs()";
      }
    }
  }
}

TEST(DiceDataCurriculumTest, HeldOutCombinationsNeverOccurInTraining) {
  CurriculumOptions o;  // the defaults: 3000 SFT pairs give every combination its chance
  for (RlKeys rl_keys : {RlKeys::kNovel, RlKeys::kSeen}) {
    o.rl_keys = rl_keys;
    const Curriculum c = generate_curriculum(o);
    ASSERT_FALSE(c.heldout.entries.empty());
    std::map<std::string, int> per_level;
    for (const auto& e : c.heldout.entries) ++per_level[e.level];
    EXPECT_EQ(per_level, (std::map<std::string, int>{{"1", 3}, {"2", 8}, {"3", 4}}));

    std::set<std::string> held_seen;
    for (const auto& [file, p] : all_pairs(c)) {
      if (!out_of_distribution(file)) {
        for (const auto& k : p->keys)
          EXPECT_FALSE(c.heldout.reserved(k)) << file << " " << p->id << " holds held-out " << k;
        continue;
      }
      bool any = false;
      for (const auto& k : p->keys)
        if (c.heldout.reserved(k)) {
          any = true;
          held_seen.insert(k);
        }
      EXPECT_TRUE(any) << p->id << " is held out but touches no held-out key";
    }
    // Every reserved combination is tested.
    for (const auto& e : c.heldout.entries) EXPECT_TRUE(held_seen.count(e.key)) << e.key;
  }

  // The keys are what the code says: a held-out level-1 parameter value is in its reference.
  const Curriculum c = generate_curriculum(o);
  for (const auto* list : {&c.heldout_infill, &c.heldout_e2e}) {
    for (const auto& p : *list) {
      if (p.family != "unary") continue;
      const std::string& key = p.keys.at(0);  // "op(name=value,...)"
      const std::regex pair("([a-z_]+)=([-0-9.e]+)");
      for (auto it = std::sregex_iterator(key.begin(), key.end(), pair);
           it != std::sregex_iterator(); ++it)
        EXPECT_NE(p.pytorch_code.find((*it)[2].str()), std::string::npos) << p.id << " " << key;
    }
  }
}

// --rl-keys novel: every RL task is built on a key of the RL split, which no SFT
// pair touches and which is not held out; every op still has training pairs; the held-out tasks
// are those of --rl-keys seen, byte for byte (the held-out split is reserved first).
TEST(DiceDataCurriculumTest, NovelRlKeysAreTheirOwnSplit) {
  CurriculumOptions o;
  o.rl_keys = RlKeys::kNovel;
  const Curriculum c = generate_curriculum(o);
  std::map<std::string, int> per_level;
  for (const auto& e : c.rl_keys.entries) {
    ++per_level[e.level];
    EXPECT_FALSE(c.heldout.reserved(e.key)) << e.key;
  }
  EXPECT_EQ(per_level, (std::map<std::string, int>{{"1", 6}, {"2", 8}, {"3", 4}}));

  // An op without its broadcast or keepdim ("add[row]" -> "add", "max/keepdim=False" -> "max");
  // a chain's label is its combination.
  auto op_of = [](const KernelPair& p) { return p.op.substr(0, p.op.find_first_of("[/")); };
  std::set<std::string> rl_seen, sft_ops, rl_ops;
  for (const auto& item : c.sft) {
    for (const auto& k : item.pair.keys)
      EXPECT_FALSE(c.rl_keys.reserved(k)) << item.pair.id << " holds RL key " << k;
    sft_ops.insert(op_of(item.pair));
  }
  for (const auto* list : {&c.rl_infill, &c.rl_e2e}) {
    for (const auto& p : *list) {
      bool any = false;
      for (const auto& k : p.keys) {
        EXPECT_FALSE(c.heldout.reserved(k)) << p.id << " holds held-out " << k;
        if (c.rl_keys.reserved(k)) {
          any = true;
          rl_seen.insert(k);
        }
      }
      EXPECT_TRUE(any) << p.id << " touches no key of the RL split";
      if (p.family != "chain") rl_ops.insert(op_of(p));
    }
  }
  for (const auto& e : c.rl_keys.entries) EXPECT_TRUE(rl_seen.count(e.key)) << e.key;
  // SFT still teaches every op the RL tasks use (in other parameters, dtypes or combinations).
  for (const auto& op : rl_ops) EXPECT_TRUE(sft_ops.count(op)) << op;

  o.rl_keys = RlKeys::kSeen;
  const Curriculum seen = generate_curriculum(o);
  EXPECT_TRUE(seen.rl_keys.entries.empty());
  ASSERT_EQ(seen.heldout_e2e.size(), c.heldout_e2e.size());
  for (std::size_t i = 0; i < c.heldout_e2e.size(); ++i) {
    EXPECT_EQ(seen.heldout_e2e[i].pytorch_code, c.heldout_e2e[i].pytorch_code);
    EXPECT_EQ(seen.heldout_e2e[i].cuda_code(), c.heldout_e2e[i].cuda_code());
  }
}

TEST(DiceDataCurriculumTest, ManifestCountsTheFilesAndListsTheHeldOutKeys) {
  CurriculumOptions o = small_options();
  o.rl_keys = RlKeys::kNovel;
  const Curriculum c = generate_curriculum(o);
  const auto files = files_of(c);
  boost::system::error_code ec;
  std::string position;
  const auto v = parse_json_text(files.at("MANIFEST.json"), &ec, &position);
  ASSERT_FALSE(ec) << position;
  const auto& m = v.as_object();
  EXPECT_EQ(str(m, "generator"), kGeneratorVersion);
  EXPECT_EQ(m.at("seed").to_number<std::uint64_t>(), 7u);
  const auto& f = m.at("files").as_object();
  for (const auto& [name, text] : files) {
    if (name == "MANIFEST.json") continue;
    const auto& stats = f.at(name).as_object();
    EXPECT_EQ(stats.at("items").to_number<std::size_t>(), json_items(text, name).size()) << name;
    EXPECT_EQ(stats.at("bytes").to_number<std::size_t>(), text.size()) << name;
    for (const char* key : {"levels", "families", "dtypes", "ops"})
      EXPECT_TRUE(stats.contains(key)) << name << ": " << key;
  }
  EXPECT_EQ(f.at("sft.json").at("levels").at("2").to_number<int>(), 30);
  const auto& held = m.at("heldout").as_array();
  ASSERT_EQ(held.size(), c.heldout.entries.size());
  for (const auto& e : held) EXPECT_TRUE(c.heldout.reserved(str(e.as_object(), "key")));
  const auto& rl = m.at("rl_keys").as_array();
  ASSERT_EQ(rl.size(), c.rl_keys.entries.size());
  for (const auto& e : rl) EXPECT_TRUE(c.rl_keys.reserved(str(e.as_object(), "key")));
  EXPECT_EQ(str(m.at("options").as_object(), "rl_keys"), "novel");
}

TEST(DiceDataCurriculumTest, CandidatesStayShort) {
  // A tiny model learns this corpus from scratch: keep every file well under 100 lines.
  const Curriculum c = generate_curriculum(small_options());
  for (const auto& [file, p] : all_pairs(c)) {
    const std::string code = p->cuda_code();
    const auto lines = std::count(code.begin(), code.end(), '\n') + 1;
    EXPECT_GE(lines, 35) << p->id;
    EXPECT_LE(lines, 95) << p->id;
  }
}

}  // namespace
}  // namespace dice::data
