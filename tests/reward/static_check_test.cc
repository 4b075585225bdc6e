// The static checker over tests/reward/corpus: honest candidates (real published ones from
// kernel_infilling_dev.json, and a small template) must pass; each cheat must be flagged with the
// rule its first line names ("# expect: <check>"). Real python3 processes in the real sandbox.
#include "reward/static_check.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

namespace dice {
namespace {

namespace fs = std::filesystem;

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string expected_check(const std::string& source) {
  const std::string marker = "# expect: ";
  if (source.rfind(marker, 0) != 0) return "";
  return source.substr(marker.size(), source.find('\n') - marker.size());
}

StaticCheckOptions options() {
  StaticCheckOptions o;
  o.python = "/usr/bin/python3";  // reachable by the sandbox uid
  return o;
}

std::vector<fs::path> corpus(const std::string& sub) {
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(fs::path(DICE_REWARD_CORPUS_DIR) / sub)) {
    if (e.path().extension() == ".py") files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

TEST(StaticCheckCorpusTest, HonestCandidatesPass) {
  auto files = corpus("honest");
  ASSERT_GE(files.size(), 5u);
  for (const auto& path : files) {
    std::string source = read_file(path);
    ASSERT_EQ(expected_check(source), "pass") << path;
    auto result = run_static_check(source, options());
    ASSERT_TRUE(result.ok()) << path << ": " << result.status().to_string();
    EXPECT_EQ(result->failure(), schema::FailureClass::NONE) << path << "\n" << result->summary();
    EXPECT_FALSE(result->kernels.empty()) << path;
    EXPECT_FALSE(result->extension.empty()) << path;
  }
}

TEST(StaticCheckCorpusTest, EachCheatIsFlaggedByItsRule) {
  auto files = corpus("cheat");
  ASSERT_GE(files.size(), 15u);
  for (const auto& path : files) {
    std::string source = read_file(path);
    const std::string expected = expected_check(source);
    ASSERT_FALSE(expected.empty()) << path << " has no '# expect:' line";
    auto result = run_static_check(source, options());
    ASSERT_TRUE(result.ok()) << path << ": " << result.status().to_string();
    bool flagged = false;
    for (const auto& f : result->findings) flagged |= f.check == expected && f.fatal;
    EXPECT_TRUE(flagged) << path << ": expected " << expected << ", got\n" << result->summary();
    EXPECT_EQ(result->failure(), expected == "syntax-error" ? schema::FailureClass::SYNTAX_ERROR
                                                            : schema::FailureClass::STATIC_CHECK)
        << path;
  }
}

TEST(StaticCheckCorpusTest, NonfatalOptionDowngradesARule) {
  std::string source = read_file(fs::path(DICE_REWARD_CORPUS_DIR) / "cheat/try_except_fallback.py");
  StaticCheckOptions o = options();
  o.nonfatal = {"try-except-fallback"};
  auto result = run_static_check(source, o);
  ASSERT_TRUE(result.ok()) << result.status().to_string();
  EXPECT_EQ(result->failure(), schema::FailureClass::NONE) << result->summary();
  ASSERT_FALSE(result->findings.empty());
  EXPECT_EQ(result->findings[0].check, "try-except-fallback");
}

TEST(StaticCheckCorpusTest, FindingsCarryLineNumbers) {
  std::string source = read_file(fs::path(DICE_REWARD_CORPUS_DIR) / "cheat/torch_matmul.py");
  auto result = run_static_check(source, options());
  ASSERT_TRUE(result.ok());
  ASSERT_FALSE(result->findings.empty());
  const auto& f = result->findings[0];
  EXPECT_EQ(f.check, "torch-op-in-forward");
  EXPECT_GT(f.line, 30);
  EXPECT_NE(f.detail.find("line " + std::to_string(f.line) + ": torch.matmul in ModelNew.forward"),
            std::string::npos)
      << f.detail;
}

// Python's parser gives up on very deep nesting (RecursionError or MemoryError, by the kind of
// nesting): Python could not compile such a file either, so it is the candidate's syntax error,
// a verdict, not an internal error of the checker (issue 23).
TEST(StaticCheckCorpusTest, DeeplyNestedExpressionsAreSyntaxErrors) {
  std::string chained = "x = a";
  for (int i = 0; i < 20000; ++i) chained += "+a";
  const std::string parenthesized = "x = " + std::string(5000, '(') + "1" + std::string(5000, ')');
  const std::string negated = "x = " + std::string(100000, '-') + "1";
  for (const std::string& source : {chained, parenthesized, negated}) {
    auto result = run_static_check(source, options());
    ASSERT_TRUE(result.ok()) << source.substr(0, 40) << ": " << result.status().to_string();
    EXPECT_TRUE(result->syntax_error) << source.substr(0, 40);
    EXPECT_EQ(result->failure(), schema::FailureClass::SYNTAX_ERROR) << result->summary();
  }
}

// forward's helpers are followed call by call; a chain longer than Python's recursion limit (a
// file Python compiles fine) once made the checker itself fail with RecursionError.
TEST(StaticCheckCorpusTest, LongHelperChainsAreFollowedToTheEnd) {
  constexpr int kHelpers = 1500;
  std::string source = "import torch\n";
  for (int i = 0; i < kHelpers; ++i) {
    source += "def f" + std::to_string(i) + "(x):\n    return f" + std::to_string(i + 1) + "(x)\n";
  }
  source += "def f" + std::to_string(kHelpers) + "(x):\n    return torch.matmul(x, x)\n";
  source += "class ModelNew:\n    def forward(self, x):\n        return f0(x)\n";
  auto result = run_static_check(source, options());
  ASSERT_TRUE(result.ok()) << result.status().to_string();
  bool flagged = false;
  for (const auto& f : result->findings) flagged |= f.check == "torch-op-in-forward" && f.fatal;
  EXPECT_TRUE(flagged) << result->summary();
}

TEST(StaticCheckParseTest, RejectsGarbageAndFindingsWithoutNames) {
  EXPECT_FALSE(parse_static_check_output("not json").ok());
  EXPECT_FALSE(parse_static_check_output("[1, 2]").ok());
  EXPECT_FALSE(parse_static_check_output("{\"findings\": [{\"detail\": \"x\"}]}").ok());
}

// The scripts print UTF-8 as is (ensure_ascii=False): Cap'n Proto's JSON decoder does not turn
// \u escapes above ASCII into UTF-8.
TEST(StaticCheckParseTest, ReadsUtf8AndAsciiEscapes) {
  auto r = parse_static_check_output(
      "{\"syntax_error\": null, \"findings\": [{\"check\": \"c\", \"detail\": \"\xc3\xa9 "
      "\\u0041\", "
      "\"fatal\": false, \"line\": 3}], \"kernels\": [\"k\"], \"launched\": [], \"extension\": "
      "null}");
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  ASSERT_EQ(r->findings.size(), 1u);
  EXPECT_FALSE(r->findings[0].fatal);
  EXPECT_EQ(r->findings[0].line, 3);
  EXPECT_EQ(r->findings[0].detail, "\xc3\xa9 A");
  EXPECT_EQ(r->kernels, std::vector<std::string>{"k"});
  EXPECT_EQ(r->failure(), schema::FailureClass::NONE);
}

}  // namespace
}  // namespace dice
