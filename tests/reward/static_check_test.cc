// The static checker over tests/reward/corpus: honest candidates (real published ones from
// kernel_infilling_dev.json, and a small template) must pass; each cheat must be flagged with the
// rule its first line names ("# expect: <check>"). Real python3 processes in the real sandbox.
#include "reward/static_check.h"

#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

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

// The template candidate with `module_code` added before ModelNew and forward's call replaced
// by `forward_line` (where one is given).
std::string template_with(const std::string& module_code, const std::string& forward_line = "") {
  std::string source = read_file(fs::path(DICE_REWARD_CORPUS_DIR) / "honest/template_scale.py");
  const std::string before_class = "\n\nclass ModelNew";
  source.insert(source.find(before_class), "\n" + module_code);
  if (!forward_line.empty()) {
    const std::string call = "y = ext.scale_cuda(x, 2.0)";
    source.replace(source.find(call), call.size(), forward_line);
  }
  return source;
}

struct Attack {
  const char* name;
  const char* module_code;
  const char* forward_line;
  const char* expected;  // the fatal check it must meet
};

void expect_each_flagged(const std::vector<Attack>& attacks) {
  for (const Attack& a : attacks) {
    auto result = run_static_check(template_with(a.module_code, a.forward_line), options());
    ASSERT_TRUE(result.ok()) << a.name << ": " << result.status().to_string();
    bool flagged = false;
    for (const auto& f : result->findings) flagged |= f.check == a.expected && f.fatal;
    EXPECT_TRUE(flagged) << a.name << ": expected " << a.expected << ", got\n" << result->summary();
  }
}

// A module reached through any name of the candidate's own is still the module: assignments,
// unpacking, sys.modules, getattr, loops, parameters (by default or by argument), lambdas, class
// and instance attributes, containers, conditional expressions, chains bound in any order, its
// __dict__, and setattr handed on as a value. Before modules were followed through bindings only
// import aliases were (issue 49: `t = torch; t.matmul = f` passed).
TEST(StaticCheckAliasTest, MonkeyPatchingThroughAnyNameIsSeen) {
  expect_each_flagged({
      {"alias", "t = torch\nt.matmul = lambda a, b: a\n", "", "monkey-patch"},
      {"setattr-alias", "f = torch.nn.functional\nsetattr(f, 'relu', lambda x: x)\n", "",
       "monkey-patch"},
      {"unpacking", "a, b = torch.cuda, 1\na.synchronize = lambda: None\n", "", "monkey-patch"},
      {"sys-modules", "import sys\nm = sys.modules['torch']\nm.matmul = None\n", "",
       "monkey-patch"},
      {"getattr", "m = getattr(torch, 'cuda')\nm.Event = object\n", "", "monkey-patch"},
      {"loop", "for m in (torch.cuda,):\n    m.synchronize = lambda: None\n", "", "monkey-patch"},
      {"parameter", "def patch(m):\n    m.relu = None\npatch(torch.nn.functional)\n", "",
       "monkey-patch"},
      {"default", "def patch(m=torch.cuda):\n    m.synchronize = None\npatch()\n", "",
       "monkey-patch"},
      {"lambda", "(lambda m: setattr(m, 'matmul', None))(torch)\n", "", "monkey-patch"},
      {"dict", "t = torch\nt.__dict__.update(matmul=None)\n", "", "monkey-patch"},
      {"setattr-as-value", "list(map(setattr, [torch], ['matmul'], [None]))\n", "", "monkey-patch"},
      {"class-attribute", "class P:\n    m = torch.cuda\nP.m.synchronize = None\n", "",
       "monkey-patch"},
      {"instance-attribute",
       "class P:\n    def __init__(self):\n        self.m = torch.cuda\n"
       "    def go(self):\n        self.m.synchronize = None\nP().go()\n",
       "", "monkey-patch"},
      {"conditional", "(torch if True else None).matmul = None\n", "", "monkey-patch"},
      {"container", "mods = [torch]\nmods[0].matmul = None\n", "", "monkey-patch"},
      {"bound-later", "def go():\n    c = b\n    c.matmul = None\nb = torch\ngo()\n", "",
       "monkey-patch"},
  });
}

// A torch function or module under a name of the candidate's own computes as torch does.
TEST(StaticCheckAliasTest, TorchCallsThroughALocalNameAreTorchCalls) {
  expect_each_flagged({
      {"function", "r = torch.relu\n", "y = r(ext.scale_cuda(x, 2.0))", "torch-op-in-forward"},
      {"parameter", "def act(x, f=torch.nn.functional.gelu):\n    return f(x)\n",
       "y = act(ext.scale_cuda(x, 2.0))", "torch-op-in-forward"},
  });
}

// try/except* (Python 3.11's ast.TryStar) is a try like any other (issue 49: it was not seen).
TEST(StaticCheckAliasTest, EveryKindOfTryIsATry) {
  expect_each_flagged({
      {"try-star",
       "def go(x):\n    try:\n        return ext.scale_cuda(x, 2.0)\n"
       "    except* RuntimeError:\n        return x\n",
       "y = go(x)", "try-except-fallback"},
  });
}

// Names for values reached from torch that change nothing: a dtype, a constant.
TEST(StaticCheckAliasTest, HonestNamesForTorchValuesPass) {
  auto result = run_static_check(
      template_with("dt = torch.float32\nBLOCK = 256\n", "y = ext.scale_cuda(x.to(dt), 2.0)"),
      options());
  ASSERT_TRUE(result.ok()) << result.status().to_string();
  EXPECT_EQ(result->failure(), schema::FailureClass::NONE) << result->summary();
}

// forward may call only the extension, this file's own functions and tensor plumbing (an
// allow-list, static_check.py's ForwardWalker): any other callee may compute. Before it was one,
// a callee the checker could not name passed (issue 49: getattr(torch, "mm"), an nn module made
// at module level or held under a local name, a lambda, functools.partial, map(torch.relu, ...)),
// and so did Python arithmetic on a tensor.
TEST(StaticCheckForwardTest, AnythingButTheExtensionAndPlumbingIsRefused) {
  const char* torch_op = "torch-op-in-forward";
  expect_each_flagged({
      {"torch.matmul", "", "y = torch.matmul(ext.scale_cuda(x, 2.0), x)", torch_op},
      {"matmul-operator", "", "y = ext.scale_cuda(x, 2.0) @ x", torch_op},
      {"F.linear", "", "y = F.linear(ext.scale_cuda(x, 2.0), self.linear.weight)", torch_op},
      {"nn-module-attribute", "", "y = self.linear(ext.scale_cuda(x, 2.0))", torch_op},
      {"getattr-torch", "", "y = getattr(torch, 'mm')(ext.scale_cuda(x, 2.0), x)", torch_op},
      {"getattr-method", "", "y = getattr(x, 'mm')(ext.scale_cuda(x, 2.0))", torch_op},
      {"module-level-nn-module", "lin = nn.Linear(4, 4)\n", "y = lin(ext.scale_cuda(x, 2.0))",
       torch_op},
      {"module-level-lambda", "mm = lambda a, b: a @ b\n", "y = mm(ext.scale_cuda(x, 2.0), x)",
       torch_op},
      {"local-name-for-a-module", "", "f = self.linear\n        y = f(ext.scale_cuda(x, 2.0))",
       torch_op},
      {"partial", "import functools\nmm = functools.partial(torch.mm)\n",
       "y = mm(ext.scale_cuda(x, 2.0), x)", torch_op},
      {"dict-dispatch", "OPS = {'mm': torch.mm}\n", "y = OPS['mm'](ext.scale_cuda(x, 2.0), x)",
       torch_op},
      {"callable-object", "class K:\n    def __call__(self, a, b):\n        return a\n",
       "y = K()(ext.scale_cuda(x, 2.0), x)", torch_op},
      {"map", "", "y = list(map(torch.relu, [ext.scale_cuda(x, 2.0)]))[0]", torch_op},
      {"abs", "", "y = abs(ext.scale_cuda(x, 2.0))", torch_op},
      {"load-library", "torch.ops.load_library('/tmp/dice_test.so')\n", "", "forbidden-import"},
      // Python arithmetic on a tensor runs torch's kernel for it.
      {"add-beside-the-kernel", "", "y = ext.scale_cuda(x, 2.0) + x", torch_op},
      {"negate", "", "y = -ext.scale_cuda(x, 2.0)", torch_op},
      {"bias-of-a-module", "", "y = ext.scale_cuda(x, 2.0) + self.linear.bias", torch_op},
      {"in-place", "", "y = ext.scale_cuda(x, 2.0)\n        y += 1", torch_op},
      {"comparison", "", "y = ext.scale_cuda((x > 0).float(), 2.0)", torch_op},
      {"in-a-helper", "def helper(a):\n    return ext.scale_cuda(a, 1.0) * 2\n", "y = helper(x)",
       torch_op},
  });
}

// The plumbing honest forwards use: views, casts, output buffers, the extension's function
// under a name of its own, helpers defined in the file or inside forward, builtins on sizes.
TEST(StaticCheckForwardTest, HonestForwardsPass) {
  const std::vector<std::pair<std::string, std::string>> honest = {
      {"", "y = ext.scale_cuda(x.contiguous().view(-1), 2.0).view(x.shape)"},
      {"", "g = ext.scale_cuda\n        y = g(x, 2.0)"},
      {"def launch(t):\n    return ext.scale_cuda(t, 2.0)\n", "y = launch(x.float())"},
      {"", "out = torch.empty_like(x)\n        y = ext.scale_cuda(x.to(torch.float32), 2.0)"},
      {"",
       "def inner(t):\n            return ext.scale_cuda(t, 2.0)\n"
       "        y = inner(x.reshape(x.size(0), -1))"},
      {"", "n = max(1, x.numel())\n        y = ext.scale_cuda(x, 2.0) if n > 0 else x"},
      // Arithmetic on sizes read from a tensor, and identity tests, are Python's.
      {"", "n = x.size(0) * 2 + x.shape[1] // 4\n        y = ext.scale_cuda(x, float(n > 3))"},
      {"", "y = ext.scale_cuda(x, 2.0) if x is not None else None"},
  };
  for (const auto& [module_code, forward_line] : honest) {
    auto result = run_static_check(template_with(module_code, forward_line), options());
    ASSERT_TRUE(result.ok()) << forward_line << ": " << result.status().to_string();
    EXPECT_EQ(result->failure(), schema::FailureClass::NONE) << forward_line << "\n"
                                                             << result->summary();
  }
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
