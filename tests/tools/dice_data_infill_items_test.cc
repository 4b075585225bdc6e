// dice-data split-infill on text (tools/dice-data/infill_items.h): a candidate to its parts, and
// files of items (a JSON array or JSON Lines) to the same items with their split, in the same
// form; errors name the file, the item, its id and the line.
#include "tools/dice-data/infill_items.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <boost/json.hpp>
#include <string>
#include <vector>

#include "common/json/parse_text.h"
#include "tests/tools/dice_data_test_util.h"
#include "tools/dice-data/curriculum.h"
#include "tools/dice-data/curriculum_writer.h"

namespace dice::data {
namespace {

namespace json = boost::json;
using testing::json_items;
using testing::kCandidate;
using testing::read_text;
using testing::str;

json::value parsed(const std::string& text) {
  boost::system::error_code ec;
  std::string position;
  json::value v = parse_json_text(text, &ec, &position);
  EXPECT_FALSE(ec) << ec.message() << " at " << position;
  return v;
}

std::vector<std::string> keys(const json::object& o) {
  std::vector<std::string> out;
  for (const auto& m : o) out.emplace_back(m.key());
  return out;
}

std::string count_lines(const std::string& s) {
  return std::to_string(std::count(s.begin(), s.end(), '\n'));
}

TEST(DiceDataInfillItemsTest, CandidateGivesItsThreeParts) {
  auto text = split_candidate_json(kCandidate, "k.py");
  ASSERT_TRUE(text.ok()) << text.status().to_string();
  EXPECT_EQ(text->back(), '\n');
  const json::object o = parsed(*text).as_object();
  EXPECT_EQ(keys(o), (std::vector<std::string>{"prefix", "middle", "suffix"}));
  EXPECT_EQ(str(o, "prefix") + str(o, "middle") + str(o, "suffix"), kCandidate);
  EXPECT_EQ(str(o, "middle").rfind("source = \"\"\"\n__global__", 0), 0u);

  auto bad = split_candidate_json("import torch\n", "k.py");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message().rfind("k.py: no load_inline(...) call", 0), 0u)
      << bad.status().message();
}

TEST(DiceDataInfillItemsTest, DevItemsComeBackAsPublishedOnePerLine) {
  const std::string path = DICE_RL_DATA_DIR "/kernel_infilling_dev.json";
  const std::string input = read_text(path);
  auto out = split_items_text(input, path);
  ASSERT_TRUE(out.ok()) << out.status().to_string();
  EXPECT_EQ(out->items, 60u);
  EXPECT_EQ(out->had_split, 60u);
  EXPECT_TRUE(out->replaced.empty());
  EXPECT_EQ(parsed(out->text), parsed(input));  // every member, in order, equal
  EXPECT_EQ(count_lines(out->text), "62");      // "[", 60 items, "]"
  EXPECT_EQ(out->text.rfind("[\n  {\"id\": 6995, \"pytorch_code\": ", 0), 0u);
}

TEST(DiceDataInfillItemsTest, CurriculumFileComesBackByteForByte) {
  CurriculumOptions o;
  o.seed = 4;
  o.sft_pairs = 10;
  o.rl_tasks_per_level = 5;
  o.heldout_per_level = 3;
  for (const auto& [name, text] : curriculum_files(generate_curriculum(o))) {
    if (name != "rl_infill.json" && name != "heldout_infill.json") continue;
    auto out = split_items_text(text, name);
    ASSERT_TRUE(out.ok()) << out.status().to_string();
    EXPECT_EQ(out->had_split, out->items) << name;
    EXPECT_TRUE(out->replaced.empty()) << name;
    EXPECT_EQ(out->text, text) << name;
  }
}

TEST(DiceDataInfillItemsTest, JsonLinesInJsonLinesOutSplitsAddedOrReplaced) {
  json::object a{{"id", "a"}, {"cuda_code", kCandidate}};
  json::object b{{"id", 7},           {"prefix", "wrong"}, {"cuda_code", kCandidate},
                 {"middle", "wrong"}, {"suffix", "wrong"}, {"level", "1"}};
  const std::string input = json::serialize(a) + "\n\n" + json::serialize(b) + "\n";
  auto out = split_items_text(input, "i.jsonl");
  ASSERT_TRUE(out.ok()) << out.status().to_string();
  EXPECT_EQ(out->items, 2u);
  EXPECT_EQ(out->had_split, 1u);
  EXPECT_EQ(out->replaced, std::vector<std::string>{"item 1 (id 7)"});
  ASSERT_EQ(count_lines(out->text), "2");
  const auto newline = out->text.find('\n');
  const json::object first = parsed(out->text.substr(0, newline)).as_object();
  const json::object second = parsed(out->text.substr(newline + 1)).as_object();
  // New members go at the end; replaced ones keep their place.
  EXPECT_EQ(keys(first),
            (std::vector<std::string>{"id", "cuda_code", "prefix", "middle", "suffix"}));
  EXPECT_EQ(keys(second),
            (std::vector<std::string>{"id", "prefix", "cuda_code", "middle", "suffix", "level"}));
  for (const auto* o : {&first, &second}) {
    EXPECT_EQ(str(*o, "prefix") + str(*o, "middle") + str(*o, "suffix"), kCandidate);
    EXPECT_NE(str(*o, "middle"), "wrong");
  }
}

TEST(DiceDataInfillItemsTest, ErrorsNameTheFileTheItemAndTheLine) {
  const std::string good = json::serialize(json::object{{"id", "g"}, {"cuda_code", kCandidate}});
  const std::string no_call =
      json::serialize(json::object{{"id", "n"}, {"cuda_code", "import torch\n"}});
  const std::string unterminated = json::serialize(
      json::object{{"id", 3}, {"cuda_code", std::string(kCandidate) + "x = '''\n"}});
  struct Case {
    std::string name, where, text;
    std::vector<std::string> messages;  // each must occur in the error, in this order
  };
  const std::vector<Case> cases = {
      {"empty", "i.json", " \n", {"i.json: empty file"}},
      {"not JSON", "i.json", "[\n  {\"id\": 1,\n", {"i.json:3:1: not JSON ("}},
      {"not an array", "i.json", "[1] [2]", {"i.json:1:5: not JSON"}},
      {"a bad line", "i.jsonl", good + "\n" + good + "\n{\"id\": \n", {"i.jsonl:3:8: not JSON"}},
      {"one pretty object",
       "i.jsonl",
       "{\n  \"id\": 1\n}\n",
       {"i.jsonl:1:2: not JSON", "JSON Lines"}},
      {"bad items, all named",
       "i.json",
       "[" + good + ", 5, {\"id\": \"m\"}, {\"cuda_code\": 1}, " + no_call + ", " + unterminated +
           "]",
       {"i.json: 5 of 6 items cannot be split:", "\n  i.json: item 1: not a JSON object",
        "\n  i.json: item 2 (id m): \"cuda_code\" is missing",
        "\n  i.json: item 3: \"cuda_code\" is not a string",
        "\n  i.json: item 4 (id n): cuda_code: no load_inline(...) call",
        "\n  i.json: item 5 (id 3): cuda_code:24: unterminated string"}},
      {"bad lines, named by line",
       "i.jsonl",
       good + "\n\n" + no_call + "\n",
       {"i.jsonl: 1 of 2 items cannot be split:",
        "\n  i.jsonl:3: item 1 (id n): cuda_code: no load_inline(...) call"}},
  };
  for (const auto& c : cases) {
    auto out = split_items_text(c.text, c.where);
    ASSERT_FALSE(out.ok()) << c.name;
    EXPECT_EQ(out.status().code(), StatusCode::kInvalidArgument) << c.name;
    const std::string& m = out.status().message();
    std::size_t at = 0;
    for (const auto& part : c.messages) {
      const auto found = m.find(part, at);
      EXPECT_NE(found, std::string::npos) << c.name << ": '" << part << "' in: " << m;
      if (found != std::string::npos) at = found + part.size();
    }
  }
}

TEST(DiceDataInfillItemsTest, ManyBadItemsAreCountedPastTheFirstTwenty) {
  std::string text = "[";
  for (int i = 0; i < 25; ++i)
    text += std::string(i ? ", " : "") + "{\"id\": " + std::to_string(i) + "}";
  auto out = split_items_text(text + "]", "i.json");
  ASSERT_FALSE(out.ok());
  const std::string& m = out.status().message();
  EXPECT_NE(m.find("25 of 25 items"), std::string::npos) << m;
  EXPECT_NE(m.find("item 19 (id 19)"), std::string::npos) << m;
  EXPECT_EQ(m.find("item 20 (id 20)"), std::string::npos) << m;
  EXPECT_NE(m.find("... and 5 more"), std::string::npos) << m;
}

}  // namespace
}  // namespace dice::data
