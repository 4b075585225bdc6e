// dice-data curriculum's in-distribution held-out split (heldout_indist_*.json) and the tasks' op
// keys: fresh instances of the RL tasks' own keys, never a training pair again, so that a gain
// on them is generalisation within what RL trained on (the out-of-distribution split asks about
// keys no training pair has).
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "tests/tools/dice_data_test_util.h"
#include "tools/dice-data/curriculum.h"
#include "tools/dice-data/curriculum_writer.h"

namespace dice::data {
namespace {

using testing::json_items;
using testing::str;

std::map<std::string, std::string> files_of(const Curriculum& c) {
  std::map<std::string, std::string> out;
  for (auto& [name, text] : curriculum_files(c)) out[name] = text;
  return out;
}

// Each RL file with the in-distribution file drawn from it.
std::vector<std::pair<const std::vector<KernelPair>*, const std::vector<KernelPair>*>> splits(
    const Curriculum& c) {
  return {{&c.rl_infill, &c.heldout_indist_infill}, {&c.rl_e2e, &c.heldout_indist_e2e}};
}

// The small recipe's flags (tools/up: 16 RL and held-out tasks per level, names and layout
// fixed), where a small op leaves a fresh instance the least to vary, and the defaults' drawn
// names and layouts; RL on seen and on novel keys.
TEST(DiceDataHeldOutInDistTest, FreshInstancesOfEachLevelsRlKeysInTurnNeverATrainingPair) {
  for (RlKeys rl_keys : {RlKeys::kSeen, RlKeys::kNovel}) {
    for (Variety surface : {Variety::kFixed, Variety::kVaried}) {
      CurriculumOptions o;
      o.rl_tasks_per_level = 16;
      o.heldout_per_level = 16;
      o.names = o.layout = surface;
      o.rl_keys = rl_keys;
      const Curriculum c = generate_curriculum(o);
      std::set<std::string> training;
      for (const auto& item : c.sft) training.insert(item.pair.pytorch_code);
      for (const auto* rl : {&c.rl_infill, &c.rl_e2e})
        for (const auto& p : *rl) training.insert(p.pytorch_code);

      for (const auto& [rl, indist] : splits(c)) {
        ASSERT_EQ(indist->size(), 48u);
        std::map<std::string, std::vector<const KernelPair*>> rl_of_level;
        for (const auto& p : *rl) rl_of_level[p.level].push_back(&p);
        std::map<std::string, std::size_t> next;
        std::set<std::string> asked;
        std::size_t other_dtype = 0;
        for (const auto& p : *indist) {
          const auto& bases = rl_of_level[p.level];
          ASSERT_FALSE(bases.empty()) << p.id;
          // Task i of a level is the level's RL task i drawn again: its key, a new instance.
          const KernelPair& base = *bases[next[p.level]++ % bases.size()];
          EXPECT_EQ(p.op_key, base.op_key) << p.id;
          EXPECT_EQ(training.count(p.pytorch_code), 0u) << p.id << " repeats a training pair";
          EXPECT_FALSE(c.heldout.touches(p.keys)) << p.id << " touches a held-out key";
          asked.insert(p.op_key);
          if (base.dtype != p.dtype) ++other_dtype;
        }
        EXPECT_EQ(next, (std::map<std::string, std::size_t>{{"1", 16}, {"2", 16}, {"3", 16}}));
        std::set<std::string> rl_asked;
        for (const auto& p : *rl) rl_asked.insert(p.op_key);
        EXPECT_EQ(asked, rl_asked) << "16 per level: every RL key is asked about";
        // Where the key leaves the dtype free it is drawn again: some instances change it.
        EXPECT_GT(other_dtype, 0u);
      }
    }
  }
}

TEST(DiceDataHeldOutInDistTest, ItsOwnCountAndTheOtherFilesUntouchedByIt) {
  CurriculumOptions o;
  o.sft_pairs = 60;
  o.rl_tasks_per_level = 5;
  o.heldout_per_level = 4;
  const auto as_held = files_of(generate_curriculum(o));
  EXPECT_EQ(json_items(as_held.at("heldout_indist_e2e.json"), "e2e").size(), 12u);
  o.heldout_indist_per_level = 7;
  const Curriculum c = generate_curriculum(o);
  const auto more = files_of(c);
  EXPECT_EQ(json_items(more.at("heldout_indist_infill.json"), "infill").size(), 21u);
  // The in-distribution split is drawn and named last: every other file is as it was.
  for (const char* name :
       {"sft.json", "rl_infill.json", "rl_e2e.json", "heldout_infill.json", "heldout_e2e.json"})
    EXPECT_EQ(as_held.at(name), more.at(name)) << name;
  // dice-judge checks them with the rest.
  std::set<std::string> verified;
  for (const auto& item : json_items(more.at("verify_items.json"), "verify"))
    verified.insert(str(item, "id"));
  for (const auto& [rl, indist] : splits(c))
    for (const auto& p : *indist) EXPECT_EQ(verified.count(p.id), 1u) << p.id;
}

// op_key is the task without its surface, in the held-out keys' own spelling where it has one.
TEST(DiceDataHeldOutInDistTest, OpKeysNameWhatEachTaskAsks) {
  CurriculumOptions o;
  o.sft_pairs = 300;
  const Curriculum c = generate_curriculum(o);
  std::map<std::string, std::set<std::string>> by_family;
  for (const auto* list : {&c.rl_infill, &c.rl_e2e, &c.heldout_infill, &c.heldout_e2e,
                           &c.heldout_indist_infill, &c.heldout_indist_e2e}) {
    for (const auto& p : *list) {
      by_family[p.family].insert(p.op_key);
      if (p.family == "binary" || p.family == "chain" || p.family == "reduce") {
        EXPECT_EQ(p.op_key, p.op) << p.id;  // "add[row]", "sub>scale>relu", "max/keepdim=True"
      } else if (p.family == "norm") {
        EXPECT_EQ(p.op_key, p.op + "/" + p.dtype) << p.id;  // "softmax/float16"
      } else if (p.keys.empty()) {
        EXPECT_EQ(p.op_key, p.op) << p.id;  // "relu"
      } else {
        EXPECT_EQ(p.op_key, p.keys[0]) << p.id;  // "leaky_relu(negative_slope=0.2)"
      }
    }
  }
  EXPECT_TRUE(by_family["unary"].count("relu"));
  // The files carry it, and the manifest counts the distinct keys of each.
  const auto files = files_of(c);
  for (const char* name : {"rl_e2e.json", "heldout_infill.json", "heldout_indist_e2e.json"}) {
    std::set<std::string> keys;
    for (const auto& t : json_items(files.at(name), name)) keys.insert(str(t, "op_key"));
    EXPECT_FALSE(keys.empty()) << name;
    boost::system::error_code ec;
    std::string position;
    const auto manifest = parse_json_text(files.at("MANIFEST.json"), &ec, &position);
    ASSERT_FALSE(ec) << position;
    EXPECT_EQ(manifest.at("files").at(name).at("op_keys").to_number<std::size_t>(), keys.size())
        << name;
  }
}

}  // namespace
}  // namespace dice::data
