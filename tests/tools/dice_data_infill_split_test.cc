// DICE's infilling split (tools/dice-data/infill_split.h): it reproduces the 60 published dev
// items and the curriculum's infill items exactly, prefix + middle + suffix is always the input,
// and inputs without that shape are errors naming the file, the line and what is wrong.
#include "tools/dice-data/infill_split.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/tools/dice_data_test_util.h"
#include "tools/dice-data/curriculum.h"

namespace dice::data {
namespace {

using testing::json_items;
using testing::kCandidate;
using testing::read_text;
using testing::str;

const char kMiddle[] = R"PY(source = """
__global__ void k(float* x) { x[0] = 1; }
torch::Tensor f(torch::Tensor x) { k<<<1, 1>>>(x.data_ptr<float>()); return x; }
""")PY";

// `text` with its first `from` replaced by `to` (a failure when `from` is not there).
std::string replaced(std::string text, const std::string& from, const std::string& to) {
  const auto at = text.find(from);
  if (at == std::string::npos) {
    ADD_FAILURE() << "'" << from << "' is not in the text";
    return text;
  }
  return text.replace(at, from.size(), to);
}

TEST(DiceDataInfillSplitTest, ReproducesEveryPublishedDevItem) {
  const std::string path = DICE_RL_DATA_DIR "/kernel_infilling_dev.json";
  const auto items = json_items(read_text(path), path);
  ASSERT_EQ(items.size(), 60u) << path;
  int matched = 0;
  for (const auto& item : items) {
    const std::string id = boost::json::serialize(item.at("id"));
    auto split = split_infill(str(item, "cuda_code"), "dev item " + id);
    ASSERT_TRUE(split.ok()) << split.status().to_string();
    EXPECT_EQ(split->prefix, str(item, "prefix")) << id;
    EXPECT_EQ(split->middle, str(item, "middle")) << id;
    EXPECT_EQ(split->suffix, str(item, "suffix")) << id;
    EXPECT_EQ(split->prefix + split->middle + split->suffix, str(item, "cuda_code")) << id;
    matched += split->prefix == str(item, "prefix") && split->middle == str(item, "middle") &&
               split->suffix == str(item, "suffix");
  }
  EXPECT_EQ(matched, 60);
}

TEST(DiceDataInfillSplitTest, ReproducesTheCurriculumsInfillItems) {
  for (const Variety variety : {Variety::kVaried, Variety::kFixed}) {
    CurriculumOptions o;
    o.seed = 9;
    o.sft_pairs = 60;
    o.rl_tasks_per_level = 12;
    o.heldout_per_level = 6;
    o.names = o.layout = variety;
    const Curriculum c = generate_curriculum(o);
    std::vector<const KernelPair*> pairs;
    for (const auto* list : {&c.rl_infill, &c.heldout_infill})
      for (const auto& p : *list) pairs.push_back(&p);
    for (const auto& item : c.sft) pairs.push_back(&item.pair);
    ASSERT_EQ(pairs.size(), 36u + 18u + 60u);
    for (const KernelPair* p : pairs) {
      auto split = split_infill(p->cuda_code(), p->id);
      ASSERT_TRUE(split.ok()) << split.status().to_string();
      EXPECT_EQ(split->prefix, p->prefix) << p->id;
      EXPECT_EQ(split->middle, p->middle) << p->id;
      EXPECT_EQ(split->suffix, p->suffix) << p->id;
    }
  }
}

TEST(DiceDataInfillSplitTest, TheMiddleIsTheAssignmentOfTheSourceLoadInlineCompiles) {
  auto split = split_infill(kCandidate, "k.py");
  ASSERT_TRUE(split.ok()) << split.status().to_string();
  EXPECT_EQ(split->middle, kMiddle);
  EXPECT_EQ(split->prefix,
            "import torch\nimport torch.nn as nn\nfrom torch.utils.cpp_extension import "
            "load_inline\n\n# A kernel and its launcher\n");
  EXPECT_EQ(split->suffix.rfind("\n\ncpp_src = ", 0), 0u);
  EXPECT_EQ(split->variable, "source");
  EXPECT_EQ(split->first_line, 6);
  EXPECT_EQ(split->last_line, 9);
}

// Other spellings of the same shape: the split still cuts at the source's assignment, and the
// three parts are the input byte for byte.
TEST(DiceDataInfillSplitTest, OtherSpellingsSplitAtTheSourceAndConcatenateToTheInput) {
  struct Case {
    std::string name;
    std::string text;
    std::string middle_starts, middle_ends;
  };
  const std::string k = kCandidate;
  std::string crlf;
  for (char ch : k) crlf += ch == '\n' ? std::string("\r\n") : std::string(1, ch);
  const std::vector<Case> cases = {
      {"CRLF line ends", crlf, "source = \"\"\"\r\n", "\r\n\"\"\""},
      {"a comment after the string", replaced(k, "\"\"\"\n\ncpp", "\"\"\"  # kernels\n\ncpp"),
       "source = \"\"\"", "return x; }\n\"\"\""},
      {"parenthesized strings",
       replaced(replaced(k, "source = \"\"\"", "source = (\"\"\""), "\"\"\"\n\ncpp",
                "\"\"\"\n    \"// more\\n\"\n)\n\ncpp"),
       "source = (\"\"\"", "\"// more\\n\"\n)"},
      {"a list of one source", replaced(k, "cuda_sources=source", "cuda_sources=[source]"),
       "source = \"\"\"", "\"\"\""},
      {"positional arguments",
       replaced(k, "name=\"ext\",\n    cpp_sources=cpp_src,\n    cuda_sources=source",
                "\"ext\", cpp_src, source"),
       "source = \"\"\"", "\"\"\""},
      {"a qualified call",
       replaced(k, "ext = load_inline(", "ext = torch.utils.cpp_extension.load_inline("),
       "source = \"\"\"", "\"\"\""},
      {"another name and quotes",
       replaced(replaced(replaced(k, "source = \"\"\"", "kernels_cu = r'''"), "\"\"\"\n\ncpp",
                         "'''\n\ncpp"),
                "cuda_sources=source", "cuda_sources=kernels_cu"),
       "kernels_cu = r'''", "return x; }\n'''"},
      {"non-ASCII text", replaced(k, "# A kernel", "# Ядро: ReLU ≥ 0"), "source = \"\"\"",
       "\"\"\""},
      {"kernels quoted elsewhere",
       replaced(k, "# A kernel",
                "doc = \"\"\"__global__ void fake() {} source = load_inline(\"\"\"\n"
                "# load_inline(cuda_sources=doc)\n# A kernel"),
       "source = \"\"\"", "\"\"\""},
      {"cpp declarations first",
       replaced(replaced(k, "\ncpp_src = \"torch::Tensor f(torch::Tensor x);\"\n", ""),
                "# A kernel", "cpp_src = \"torch::Tensor f(torch::Tensor x);\"\n# A kernel"),
       "source = \"\"\"", "\"\"\""},
      {"no newline at the end", k.substr(0, k.size() - 1), "source = \"\"\"", "\"\"\""},
  };
  for (const auto& c : cases) {
    auto split = split_infill(c.text, "k.py");
    ASSERT_TRUE(split.ok()) << c.name << ": " << split.status().to_string();
    EXPECT_EQ(split->prefix + split->middle + split->suffix, c.text) << c.name;
    EXPECT_EQ(split->middle.rfind(c.middle_starts, 0), 0u) << c.name << ": " << split->middle;
    ASSERT_GE(split->middle.size(), c.middle_ends.size()) << c.name;
    EXPECT_EQ(split->middle.substr(split->middle.size() - c.middle_ends.size()), c.middle_ends)
        << c.name << ": " << split->middle;
    // The middle starts a line: the prefix is whole lines.
    EXPECT_TRUE(split->prefix.empty() || split->prefix.back() == '\n') << c.name;
  }
}

TEST(DiceDataInfillSplitTest, MalformedInputsAreErrorsNamingFileLineAndWhat) {
  const std::string k = kCandidate;
  struct Case {
    std::string name;
    std::string text;
    std::string message;  // the whole message's start
  };
  const std::vector<Case> cases = {
      {"empty", "", "k.py: empty file"},
      {"blank", "\n  \n\t\n", "k.py: empty file"},
      {"not UTF-8", replaced(k, "# A kernel", "# A k\xff\xfernel"), "k.py:5: not UTF-8 text"},
      {"no load_inline",
       replaced(replaced(k, "ext = load_inline(", "ext = build("), "import load_inline",
                "import build"),
       "k.py: no load_inline(...) call"},
      {"only in a comment", replaced(k, "ext = load_inline(", "# load_inline(\next = build("),
       "k.py: no load_inline(...) call"},
      {"two calls",
       replaced(k, "\n\nclass ModelNew",
                "\ne2 = load_inline(name=\"b\", cpp_sources=cpp_src, cuda_sources=source)\n"
                "\n\nclass ModelNew"),
       "k.py:20: 2 load_inline(...) calls (lines 13, 20)"},
      {"no cuda_sources", replaced(k, "    cuda_sources=source,\n", ""),
       "k.py:13: load_inline(...) has no cuda_sources argument"},
      {"source inside the call",
       replaced(k, "cuda_sources=source", "cuda_sources=\"__global__ void k() {}\""),
       "k.py:16: the CUDA source is written inside load_inline(...) "
       "(cuda_sources=\"__global__ void k() {}\")"},
      {"several sources", replaced(k, "cuda_sources=source", "cuda_sources=[source, more]"),
       "k.py:16: cuda_sources=[source, more] names several strings"},
      {"an expression", replaced(k, "cuda_sources=source", "cuda_sources=source + more"),
       "k.py:16: cuda_sources=source + more is not a variable"},
      {"None", replaced(k, "cuda_sources=source", "cuda_sources=None"),
       "k.py:16: cuda_sources=None is not a variable"},
      {"no assignment", replaced(k, "source = \"\"\"", "other = \"\"\""),
       "k.py:13: cuda_sources=source, but no top-level assignment source = \"...\""},
      {"assigned after the call",
       replaced(replaced(k, "source = \"\"\"", "other = \"\"\""), "\n\nclass ModelNew",
                "\nsource = \"__global__ void g() {}\"\n\n\nclass ModelNew"),
       "k.py:13: cuda_sources=source, but no top-level assignment"},
      {"only indented", replaced(k, "source = \"\"\"", "if True:\n    source = \"\"\""),
       "k.py:14: cuda_sources=source, but no top-level assignment"},
      {"assigned twice", replaced(k, "# A kernel", "source = \"\"\n# A kernel"),
       "k.py:7: source is assigned 2 times before load_inline (lines 5, 7)"},
      {"extended", replaced(k, "\ncpp_src", "source += \"// more\"\ncpp_src"),
       "k.py:10: source is assigned 2 times before load_inline (lines 6, 10)"},
      {"computed", replaced(k, "source = \"\"\"", "source = open('k.cu').read() + \"\"\""),
       "k.py:6: source = open('k.cu').read() + \"\"\" "},
      {"unterminated", replaced(k, "\"\"\"\n\ncpp_src", "\n\ncpp_src"),
       "k.py:6: unterminated string: the \"\"\" opened here is never closed"},
      {"unclosed call", replaced(k, "    functions=[\"f\"],\n)", "    functions=[\"f\"],\n"),
       "k.py:13: '(' is never closed"},
      {"no ModelNew", replaced(k, "class ModelNew", "class Model"),
       "k.py:9: no top-level class ModelNew after the CUDA source"},
  };
  for (const auto& c : cases) {
    auto split = split_infill(c.text, "k.py");
    ASSERT_FALSE(split.ok()) << c.name;
    EXPECT_EQ(split.status().code(), StatusCode::kInvalidArgument) << c.name;
    EXPECT_EQ(split.status().message().rfind(c.message, 0), 0u)
        << c.name << ": " << split.status().message();
  }
}

}  // namespace
}  // namespace dice::data
