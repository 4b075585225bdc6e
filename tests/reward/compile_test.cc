// Real compiles: extract_sources.py on a candidate, nvcc + the host compiler in the sandbox, the
// content-hash cache. Needs nvcc and a python3 with torch (Debian: python3-torch); skips with a
// message otherwise. Without a GPU the target is sm_90.
#include "reward/compile/compile.h"
#include "tests/support/small_tmpfs.h"

#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "common/remove_tree.h"
#include "common/seconds_since.h"

namespace dice {
namespace {

namespace fs = std::filesystem;

constexpr char kPython[] = "/usr/bin/python3";

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Whether the built module imports in python3 after torch (as runner.py imports it; no GPU
// needed) and exports each of `functions`.
bool module_imports(const CompileOutcome& built, const std::vector<std::string>& functions) {
  std::string names;
  for (const auto& f : functions) names += "'" + f + "',";
  const std::string code = "import sys; sys.path.insert(0, '" +
                           fs::path(built.module_path).parent_path().string() +
                           "'); import torch; import " + built.module_name +
                           " as m; assert all(callable(getattr(m, f)) for f in [" + names + "])";
  return std::system((std::string(kPython) + " -c \"" + code + "\"").c_str()) == 0;
}

class CompileTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    ToolchainOptions o;
    o.python = kPython;
    o.cuda_arch = "sm_90";
    auto tc = probe_toolchain(o);
    if (!tc.ok()) {
      skip_reason_ = new std::string(tc.status().to_string());
      return;
    }
    toolchain_ = new Toolchain(tc.value());
  }
  static void TearDownTestSuite() {
    delete toolchain_;
    toolchain_ = nullptr;
  }
  void SetUp() override {
    if (toolchain_ == nullptr) GTEST_SKIP() << "no toolchain: " << *skip_reason_;
    cache_dir_ = fs::temp_directory_path() /
                 ("dice-compile-test-" + std::to_string(getpid()) + "-" +
                  ::testing::UnitTest::GetInstance()->current_test_info()->name());
    ASSERT_TRUE(remove_tree(cache_dir_.string()).ok());
  }
  void TearDown() override { EXPECT_TRUE(remove_tree(cache_dir_.string()).ok()); }

  CompileOptions options() const {
    CompileOptions o;
    o.cache_dir = cache_dir_.string();
    o.jobs = 2;
    o.timeout_seconds = 900;  // a loaded 2-core CI machine; ~1 min of CPU per compile
    // Its one-off build (~16 s here) only in the test of it.
    o.precompiled_binding_prelude = false;
    return o;
  }

  std::vector<ExtensionSources> sources_of(const std::string& file) {
    SandboxSpec spec;
    spec.timeout_seconds = 30;
    auto ext = extract_extension_sources(read_file(fs::path(DICE_REWARD_CORPUS_DIR) / file),
                                         kPython, DICE_REWARD_PYTHON_DIR, spec);
    EXPECT_TRUE(ext.ok()) << ext.status().to_string();
    return ext.ok() ? ext.value() : std::vector<ExtensionSources>{};
  }

  static Toolchain* toolchain_;
  static std::string* skip_reason_;
  fs::path cache_dir_;
};

Toolchain* CompileTest::toolchain_ = nullptr;
std::string* CompileTest::skip_reason_ = nullptr;

TEST_F(CompileTest, TinyKernelCompilesOnceThenHitsTheCache) {
  auto exts = sources_of("honest/template_scale.py");
  ASSERT_EQ(exts.size(), 1u);
  EXPECT_EQ(exts[0].name, "scale_ext");
  EXPECT_EQ(exts[0].functions, std::vector<std::string>{"scale_cuda"});
  // The cache given relative to the working directory: nvcc runs elsewhere, so the compiler
  // must resolve it first.
  CompileOptions relative = options();
  relative.cache_dir = fs::relative(cache_dir_).string();
  ASSERT_FALSE(fs::path(relative.cache_dir).is_absolute());
  Compiler compiler(*toolchain_, relative);
  // Two requests for the same source while the first builds: one build.
  auto first = compiler.submit(exts[0]);
  auto second = compiler.submit(exts[0]);
  CompileOutcome a = first.get();
  CompileOutcome b = second.get();
  ASSERT_EQ(a.failure, schema::FailureClass::NONE) << a.log_excerpt;
  EXPECT_FALSE(a.cache_hit);
  EXPECT_EQ(a.module_path, b.module_path);
  EXPECT_TRUE(fs::exists(a.module_path));
  EXPECT_TRUE(fs::path(a.module_path).is_absolute()) << a.module_path;
  EXPECT_NE(a.module_path.find("/" + a.source_hash + "/scale_ext"), std::string::npos);
  std::cout << "[ measure ] tiny kernel compile: " << a.seconds << " s\n";
  // The module is owned by the worker, not the sandbox uid, and nothing of the build remains.
  struct stat st;
  ASSERT_EQ(stat(a.module_path.c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, geteuid());
  for (const auto& e : fs::directory_iterator(cache_dir_)) {
    EXPECT_EQ(e.path().filename().string().find(".build-"), std::string::npos) << e.path();
  }
  CompileOutcome again = compiler.compile(exts[0]);
  EXPECT_TRUE(again.cache_hit);
  EXPECT_EQ(again.module_path, a.module_path);
}

// A cache whose disk is full is ours, not the candidate's: the build is not started and the
// outcome is INTERNAL_ERROR naming the disk, never a compile error an honest kernel would get
// from a compiler that met ENOSPC.
TEST_F(CompileTest, ACacheOnAFullDiskStartsNoBuildAndBlamesTheDiskNotTheCandidate) {
  testing_util::SmallTmpfs disk(2048);
  if (!disk.mounted()) GTEST_SKIP() << disk.skip_reason();
  auto exts = sources_of("honest/template_scale.py");
  ASSERT_EQ(exts.size(), 1u);
  CompileOptions o = options();
  o.cache_dir = disk.path() + "/cache";
  Compiler compiler(*toolchain_, o);
  const CompileOutcome out = compiler.compile(exts[0]);
  EXPECT_EQ(out.failure, schema::FailureClass::INTERNAL_ERROR) << out.log_excerpt;
  EXPECT_NE(out.log_excerpt.find("not enough free disk space"), std::string::npos)
      << out.log_excerpt;
  EXPECT_NE(out.log_excerpt.find("cache_min_free_mb"), std::string::npos) << out.log_excerpt;
  EXPECT_TRUE(out.tiers.empty()) << "a compiler ran";
}

// The binding's headers are precompiled once (binding_pch.h) and included by every binding; a
// worker prepares both variants when it starts. A damaged .gch must cost only time: g++ then
// reads the plain header.
TEST_F(CompileTest, BindingUsesThePrecompiledPreludeAndSurvivesADamagedOne) {
  auto exts = sources_of("honest/template_scale.py");
  ASSERT_EQ(exts.size(), 1u);
  CompileOptions with_pch = options();
  with_pch.precompiled_binding_prelude = true;
  std::string gch;
  {
    Compiler compiler(*toolchain_, with_pch);
    // kSlim's and kAten's (split builds' bindings), before any build.
    EXPECT_EQ(compiler.prepare_binding_headers(), 2);
    std::vector<std::string> prepared;
    for (const auto& e : fs::directory_iterator(cache_dir_)) {
      if (e.path().filename().string().rfind("pch-", 0) == 0 &&
          fs::exists(e.path() / "binding_prelude.h.gch"))
        prepared.push_back(e.path().filename().string());
    }
    EXPECT_EQ(prepared.size(), 2u) << "pch-* folders with a .gch in " << cache_dir_;
    CompileOutcome a = compiler.compile(exts[0]);
    ASSERT_EQ(a.failure, schema::FailureClass::NONE) << a.log_excerpt;
    const std::string binding = read_file(fs::path(a.module_path).parent_path() / "binding.cpp");
    for (const auto& dir : prepared) {
      const std::string header = (cache_dir_ / dir / "binding_prelude.h").string();
      if (binding.rfind("#include \"" + header + "\"\n", 0) == 0) gch = header + ".gch";
    }
    ASSERT_FALSE(gch.empty()) << "the binding includes no prepared header: "
                              << binding.substr(0, 300);
    // Ready ones are found, not built again.
    const auto built_at = fs::last_write_time(gch);
    EXPECT_EQ(Compiler(*toolchain_, with_pch).prepare_binding_headers(), 2);
    EXPECT_EQ(fs::last_write_time(gch), built_at);
  }
  { std::ofstream(gch, std::ios::binary | std::ios::trunc) << "not a precompiled header"; }
  ExtensionSources changed = exts[0];
  changed.cuda_sources.replace(changed.cuda_sources.find("y[i] = x[i] * s;"), 16,
                               "y[i] = x[i] * s + 0;");
  Compiler compiler(*toolchain_, with_pch);  // a new process would find the damaged file
  CompileOutcome b = compiler.compile(changed);
  EXPECT_EQ(b.failure, schema::FailureClass::NONE) << b.log_excerpt;
  EXPECT_FALSE(b.cache_hit);
}

// What kernel files commonly use of torch builds with the lean headers alone: operators named
// torch::, dtype names from torch/types.h, TORCH_CHECK, AT_DISPATCH_*.
TEST_F(CompileTest, TypicalKernelBuildsWithTheLeanHeaders) {
  auto exts = sources_of("honest/template_scale.py");
  ASSERT_EQ(exts.size(), 1u);
  ExtensionSources typical = exts[0];
  typical.cuda_sources +=
      "\ntemplate <typename T> __global__ void twice(const T* x, T* y, long n) {\n"
      "  long i = blockIdx.x * (long)blockDim.x + threadIdx.x;\n"
      "  if (i < n) y[i] = x[i] + x[i];\n}\n"
      "torch::Tensor twice_cuda(torch::Tensor x) {\n"
      "  TORCH_CHECK(x.dtype() == torch::kFloat32 || x.dtype() == torch::kFloat64, \"dtype\");\n"
      "  auto y = torch::empty_like(x);\n"
      "  auto z = torch::zeros({1}, x.options().dtype(torch::kInt32));\n"
      "  AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), \"twice\", [&] {\n"
      "    twice<scalar_t><<<1, 1>>>(x.data_ptr<scalar_t>(), y.data_ptr<scalar_t>(), x.numel());\n"
      "  });\n"
      "  return y;\n}\n";
  CompileOptions lean = options();
  lean.split_host_device = false;  // the lean tier itself (a template kernel is not split anyway)
  Compiler compiler(*toolchain_, lean);
  CompileOutcome built = compiler.compile(typical);
  EXPECT_EQ(built.failure, schema::FailureClass::NONE) << built.log_excerpt;
  EXPECT_EQ(compiler.lean_header_fallbacks(), 0u);
}

// A kernel file that uses more of torch than the lean headers give (tensor indexing) still
// builds: the lean attempt fails and the full headers decide, with no slim tier between them.
TEST_F(CompileTest, SourceBeyondTheLeanHeadersFallsBackToTheFullOnes) {
  auto exts = sources_of("honest/template_scale.py");
  ASSERT_EQ(exts.size(), 1u);
  ExtensionSources indexed = exts[0];
  indexed.cuda_sources +=
      "\ntorch::Tensor first_two(torch::Tensor x) {\n"
      "  return x.index({torch::indexing::Slice(0, 2)});\n}\n";
  CompileOptions lean = options();
  lean.split_host_device = false;  // the split build would compile it: its host code has all torch
  Compiler compiler(*toolchain_, lean);
  CompileOutcome built = compiler.compile(indexed);
  EXPECT_EQ(built.failure, schema::FailureClass::NONE) << built.log_excerpt;
  EXPECT_EQ(built.tiers, (std::vector<std::string>{"lean", "full"}));
  EXPECT_EQ(compiler.lean_header_fallbacks(), 1u);
  EXPECT_EQ(compiler.full_header_builds(), 1u);
  EXPECT_EQ(compiler.own_error_builds(), 0u);  // the lean error named torch's Slice
}

TEST_F(CompileTest, CompileErrorComesBackTrimmed) {
  auto exts = sources_of("honest/template_scale.py");
  ASSERT_EQ(exts.size(), 1u);
  ExtensionSources broken = exts[0];
  // A name torch's headers spell (a member's) and do not declare where the kernel looks: the
  // split tier cannot rule out that the full headers declare it.
  broken.cuda_sources.replace(broken.cuda_sources.find("y[i] = x[i] * s;"), 16,
                              "y[i] = x[i] * numel;");
  Compiler compiler(*toolchain_, options());
  CompileOutcome out = compiler.compile(broken);
  EXPECT_EQ(out.failure, schema::FailureClass::COMPILE_ERROR);
  EXPECT_NE(out.log_excerpt.find("\"numel\""), std::string::npos) << out.log_excerpt;
  EXPECT_NE(out.log_excerpt.find("nvcc"), std::string::npos) << out.log_excerpt;
  EXPECT_LE(std::count(out.log_excerpt.begin(), out.log_excerpt.end(), '\n'), 20);
  EXPECT_TRUE(out.module_path.empty());
  // The kernels failed without torch's headers, then with all of them: no tier between. The full
  // tier compiled the kernels first, and the binding (all of torch's headers) never.
  EXPECT_EQ(out.tiers, (std::vector<std::string>{"split", "full"}));
  EXPECT_EQ(compiler.units_not_compiled(), 1u);
}

// A compile error that is the candidate's own (compile_diagnostics.h) ends the build in the tier
// that saw it: a syntax error in the kernel compiles once, where the full headers compiled it
// again before; a source that needs a declaration only the full headers have (std::array in
// device code: the split's kernels get no torch headers) still builds.
TEST_F(CompileTest, OwnCompileErrorIsDecidedInOneTier) {
  auto exts = sources_of("honest/template_scale.py");
  ASSERT_EQ(exts.size(), 1u);
  const std::string body = "if (i < n) y[i] = x[i] * s;";
  ExtensionSources syntax = exts[0];
  syntax.name = "syntax_error";
  syntax.cuda_sources.replace(syntax.cuda_sources.find(body), body.size(),
                              "if (i < n) y[i] = x[i] * s");
  ExtensionSources needs_full = exts[0];
  needs_full.name = "needs_full";
  needs_full.cuda_sources.replace(needs_full.cuda_sources.find(body), body.size(),
                                  "std::array<float, 1> a{s}; if (i < n) y[i] = x[i] * a[0];");
  Compiler compiler(*toolchain_, options());
  auto a = compiler.submit(syntax);
  auto b = compiler.submit(needs_full);
  const CompileOutcome& broken = a.get();
  EXPECT_EQ(broken.failure, schema::FailureClass::COMPILE_ERROR) << broken.log_excerpt;
  EXPECT_EQ(broken.tiers, std::vector<std::string>{"split"}) << broken.log_excerpt;
  EXPECT_NE(broken.log_excerpt.find("expected a \";\""), std::string::npos) << broken.log_excerpt;
  const CompileOutcome& built = b.get();
  ASSERT_EQ(built.failure, schema::FailureClass::NONE) << built.log_excerpt;
  EXPECT_EQ(built.tiers, (std::vector<std::string>{"split", "full"}));
  EXPECT_TRUE(module_imports(built, exts[0].functions));
  EXPECT_EQ(compiler.own_error_builds(), 1u);
  // needs_full's kernels compiled, then its binding: nothing saved there. The syntax error's
  // binding was stopped if it had not compiled by the time nvcc failed (compile_together).
  EXPECT_LE(compiler.units_not_compiled(), 1u);
  std::cout << "[ measure ] syntax error, split tier only: " << broken.seconds << " s\n";

  // Without the split the lean tier decides alone, and is not counted as a fallback.
  CompileOptions lean = options();
  lean.split_host_device = false;
  lean.cache_dir += "-lean";
  Compiler lean_compiler(*toolchain_, lean);
  const CompileOutcome lean_broken = lean_compiler.compile(syntax);
  EXPECT_TRUE(remove_tree(lean.cache_dir).ok());
  EXPECT_EQ(lean_broken.failure, schema::FailureClass::COMPILE_ERROR) << lean_broken.log_excerpt;
  EXPECT_EQ(lean_broken.tiers, std::vector<std::string>{"lean"}) << lean_broken.log_excerpt;
  EXPECT_EQ(lean_compiler.own_error_builds(), 1u);
  EXPECT_EQ(lean_compiler.lean_header_fallbacks(), 0u);
}

// Where both units compile at once, a failure that settles the tier stops the other: a kernel
// with a syntax error (nvcc reports it in seconds) beside a binding that compiles for long (here
// constant evaluations of ~4 s each, ~50 s in all on the 2-core dev VM) ends when nvcc does, the
// binding stopped, instead of when the binding would have compiled.
TEST_F(CompileTest, AnOwnErrorStopsTheOtherUnitOfItsTier) {
  auto exts = sources_of("honest/template_scale.py");
  ASSERT_EQ(exts.size(), 1u);
  const std::string body = "if (i < n) y[i] = x[i] * s;";
  ExtensionSources broken = exts[0];
  broken.cuda_sources.replace(broken.cuda_sources.find(body), body.size(),
                              "if (i < n) y[i] = x[i] * s");
  broken.cpp_sources +=
      "\ntemplate <int K> constexpr long slow_binding() {\n"
      "  long s = K;\n"
      "  for (long i = 0; i < 8; ++i)\n"
      "    for (long j = 0; j < 200000; ++j) s += j % 7;\n"
      "  return s;\n}\n";
  for (int k = 0; k < 12; ++k) {
    broken.cpp_sources += "static_assert(slow_binding<" + std::to_string(k) + ">() > 0, \"\");\n";
  }
  Compiler compiler(*toolchain_, options());
  const CompileOutcome out = compiler.compile(broken);
  EXPECT_EQ(out.failure, schema::FailureClass::COMPILE_ERROR) << out.log_excerpt;
  EXPECT_EQ(out.tiers, std::vector<std::string>{"split"}) << out.log_excerpt;
  EXPECT_NE(out.log_excerpt.find("expected a \";\""), std::string::npos) << out.log_excerpt;
  EXPECT_EQ(compiler.own_error_builds(), 1u);
  EXPECT_EQ(compiler.units_not_compiled(), 1u);  // the binding, stopped
  std::cout << "[ measure ] syntax error beside a slow binding: " << out.seconds << " s\n";
}

// A name that no header of the full tier spells (header_names.h) is undeclared there too: the
// split tier decides, where the full headers compiled the kernels again before. The real
// headers' names are read once (their count and time printed).
TEST_F(CompileTest, AnUnknownNameIsDecidedInTheSplitTier) {
  auto exts = sources_of("honest/template_scale.py");
  ASSERT_EQ(exts.size(), 1u);
  ExtensionSources broken = exts[0];
  const std::string body = "y[i] = x[i] * s;";
  broken.cuda_sources.replace(broken.cuda_sources.find(body), body.size(),
                              "y[i] = expm1ff(x[i]) * s;");
  ExtensionSources header_name = exts[0];  // a name torch's headers spell: the full tier decides
  header_name.name = "header_name";
  header_name.cuda_sources.replace(header_name.cuda_sources.find(body), body.size(),
                                   "y[i] = x[i] * s * kDouble;");
  Compiler compiler(*toolchain_, options());
  const CompileOutcome out = compiler.compile(broken);
  EXPECT_EQ(out.failure, schema::FailureClass::COMPILE_ERROR) << out.log_excerpt;
  EXPECT_EQ(out.tiers, std::vector<std::string>{"split"}) << out.log_excerpt;
  EXPECT_NE(out.log_excerpt.find("expm1ff"), std::string::npos) << out.log_excerpt;
  EXPECT_EQ(compiler.own_error_builds(), 1u);
  const CompileOutcome retried = compiler.compile(header_name);
  EXPECT_EQ(retried.failure, schema::FailureClass::COMPILE_ERROR) << retried.log_excerpt;
  EXPECT_EQ(retried.tiers, (std::vector<std::string>{"split", "full"})) << retried.log_excerpt;
  EXPECT_EQ(compiler.own_error_builds(), 1u);
}

TEST_F(CompileTest, RealDevCandidateCompiles) {
  auto exts = sources_of("honest/dev_444.py");
  ASSERT_EQ(exts.size(), 1u);
  Compiler compiler(*toolchain_, options());
  CompileOutcome out = compiler.compile(exts[0]);
  ASSERT_EQ(out.failure, schema::FailureClass::NONE) << out.log_excerpt;
  std::cout << "[ measure ] dev 444 compile: " << out.seconds << " s\n";
}

// The split build (split_sources.h) of dev candidates: kernels without torch headers, host code
// in the binding file; the modules import and export what load_inline's would.
TEST_F(CompileTest, SplitBuildsOfDevCandidatesImport) {
  std::vector<ExtensionSources> exts;
  // (Not dev_7678, dev_3497, dev_4383: they include torch's CUDA headers, which Debian's CPU
  // torch on the dev VM lacks.)
  for (const char* file : {"honest/dev_444.py", "honest/dev_6995.py", "honest/dev_3139.py"}) {
    auto e = sources_of(file);
    ASSERT_EQ(e.size(), 1u) << file;
    exts.push_back(e[0]);
  }
  Compiler compiler(*toolchain_, options());
  std::vector<std::shared_future<CompileOutcome>> builds;
  for (const auto& ext : exts) builds.push_back(compiler.submit(ext));
  for (size_t i = 0; i < exts.size(); ++i) {
    const CompileOutcome& out = builds[i].get();
    ASSERT_EQ(out.failure, schema::FailureClass::NONE) << exts[i].name << ": " << out.log_excerpt;
    const fs::path dir = fs::path(out.module_path).parent_path();
    EXPECT_NE(read_file(dir / "binding.cpp").find("dice_split_launch_"), std::string::npos);
    const std::string kernels = read_file(dir / "kernels.cu");
    EXPECT_EQ(kernels.find("#include <torch/"), std::string::npos) << exts[i].name;
    EXPECT_EQ(kernels.find("#include <ATen/"), std::string::npos) << exts[i].name;
    EXPECT_TRUE(module_imports(out, exts[i].functions)) << exts[i].name;
    std::cout << "[ measure ] " << exts[i].name << " split compile: " << out.seconds << " s\n";
  }
  EXPECT_EQ(compiler.split_fallbacks(), 0u);
  EXPECT_EQ(compiler.lean_header_fallbacks(), 0u);
}

// Split builds compile the binding with kAten's headers (binding.h); host code that needs more of
// torch than they have is compiled again with kSlim's, against the same kernels object.
TEST_F(CompileTest, SplitBindingTakesTheAtenHeadersElseTheSlimOnes) {
  auto exts = sources_of("honest/dev_444.py");
  ASSERT_EQ(exts.size(), 1u);
  ExtensionSources plain = exts[0];
  ExtensionSources autograd = exts[0];
  autograd.name = "needs_autograd";
  // torch::autograd::Variable is in torch/types.h's headers (autograd/variable.h), not in ATen's.
  autograd.cuda_sources +=
      "\ntorch::autograd::Variable dice_test_same(torch::autograd::Variable x) { return x; }\n";
  Compiler compiler(*toolchain_, options());
  auto a = compiler.submit(plain);
  auto b = compiler.submit(autograd);
  for (const auto* build : {&a, &b}) {
    const CompileOutcome& out = build->get();
    ASSERT_EQ(out.failure, schema::FailureClass::NONE) << out.log_excerpt;
    const fs::path dir = fs::path(out.module_path).parent_path();
    const std::string binding = read_file(dir / "binding.cpp");
    EXPECT_NE(binding.find("dice_split_launch_"), std::string::npos) << out.module_name;
    const bool aten = build == &a;
    EXPECT_EQ(binding.find("#include <ATen/ATen.h>") != std::string::npos, aten) << binding;
    EXPECT_EQ(binding.find("#include <torch/types.h>") != std::string::npos, !aten) << binding;
    EXPECT_TRUE(module_imports(out, exts[0].functions)) << out.module_name;
  }
  EXPECT_EQ(compiler.split_fallbacks(), 0u);
  EXPECT_EQ(compiler.aten_binding_fallbacks(), 1u);
}

// Every option that changes the module changes its cache key: nvcc's optimisation and the split.
// The default key is the one split builds with kAten's binding headers and the binding at -O1
// have had since those came, so a worker's existing cache stays valid.
TEST(CompileCacheKeyTest, CoversTheFlagsAndScheme) {
  Toolchain tc;
  tc.nvcc_version = "release 13.0";
  tc.arch = "sm_90";
  tc.torch_version = "1.13";
  tc.cxx = "c++";
  ExtensionSources ext;
  ext.name = "k";
  ext.cuda_sources = "__global__ void k() {}\n";
  CompileOptions o;
  const std::string base = extension_hash(ext, tc, o);
  EXPECT_EQ(base, extension_hash(ext, tc, "-O3 binding -O1", "split-v2-aten"));
  CompileOptions kernels_o2 = o;
  kernels_o2.optimization = "-O2";
  CompileOptions unsplit = o;
  unsplit.split_host_device = false;
  EXPECT_NE(extension_hash(ext, tc, kernels_o2), base);
  EXPECT_NE(extension_hash(ext, tc, unsplit), base);
  EXPECT_NE(extension_hash(ext, tc, unsplit), extension_hash(ext, tc, kernels_o2));
}

// A source the split does not apply to (a template kernel), and one it applies to that does not
// compile without torch's headers (std::array, which they include, in device code): both fall
// back to the header tiers and build; the cache key says which scheme built a module.
TEST_F(CompileTest, SplitThatDoesNotApplyOrFailsFallsBackAndBuilds) {
  auto exts = sources_of("honest/template_scale.py");
  ASSERT_EQ(exts.size(), 1u);
  ExtensionSources templated = exts[0];
  templated.name = "templated";
  templated.cuda_sources +=
      "\ntemplate <typename T> __global__ void twice(const T* x, T* y, long n) {\n"
      "  long i = blockIdx.x * (long)blockDim.x + threadIdx.x;\n"
      "  if (i < n) y[i] = x[i] + x[i];\n}\n"
      "torch::Tensor twice_cuda(torch::Tensor x) {\n"
      "  auto y = torch::empty_like(x);\n"
      "  twice<float><<<1, 1>>>(x.data_ptr<float>(), y.data_ptr<float>(), x.numel());\n"
      "  return y;\n}\n";
  ExtensionSources with_array = exts[0];
  with_array.name = "with_array";
  const std::string body = "if (i < n) y[i] = x[i] * s;";
  with_array.cuda_sources.replace(with_array.cuda_sources.find(body), body.size(),
                                  "std::array<float, 1> a{s}; if (i < n) y[i] = x[i] * a[0];");
  Compiler compiler(*toolchain_, options());
  auto a = compiler.submit(templated);
  auto b = compiler.submit(with_array);
  for (const auto* build : {&a, &b}) {
    const CompileOutcome& out = build->get();
    ASSERT_EQ(out.failure, schema::FailureClass::NONE) << out.log_excerpt;
    const fs::path dir = fs::path(out.module_path).parent_path();
    EXPECT_EQ(read_file(dir / "binding.cpp").find("dice_split_launch_"), std::string::npos);
    EXPECT_TRUE(module_imports(out, exts[0].functions)) << out.module_name;
  }
  EXPECT_EQ(compiler.split_fallbacks(), 2u);
  EXPECT_EQ(compiler.lean_header_fallbacks(), 0u);
  EXPECT_NE(extension_hash(templated, *toolchain_, "-O3"),
            extension_hash(templated, *toolchain_, "-O3", "split-v1"));
}

// A template bomb: 2^40 distinct instantiations at a depth of only 40, so no depth limit stops
// it; it grows until the time or the memory runs out.
constexpr char kTemplateBomb[] =
    "\ntemplate <int D, long I> struct Bomb {\n"
    "  static constexpr long v = Bomb<D - 1, 2 * I>::v + Bomb<D - 1, 2 * I + 1>::v;\n};\n"
    "template <long I> struct Bomb<0, I> { static constexpr long v = I; };\n"
    "__global__ void bomb_kernel(long* out) { *out = Bomb<40, 0>::v; }\n";

// One budget covers a candidate's whole compile: the bomb's first tier runs out of it and no
// other tier is tried; a second module of the same candidate, queued behind it, finds the budget
// spent and compiles nothing.
TEST_F(CompileTest, TemplateBombEndsWithinTheBudgetAndIsNotRetried) {
  auto exts = sources_of("honest/template_scale.py");
  ASSERT_EQ(exts.size(), 1u);
  ExtensionSources bomb = exts[0];
  bomb.name = "bomb_a";
  bomb.cuda_sources += kTemplateBomb;
  ExtensionSources second = bomb;
  second.name = "bomb_b";
  CompileOptions o = options();
  o.jobs = 1;  // the second module waits in the queue, on the candidate's clock
  constexpr double kBudget = 10;
  o.timeout_seconds = kBudget;
  Compiler compiler(*toolchain_, o);
  auto budget = std::make_shared<CompileBudget>(kBudget);
  const auto start = std::chrono::steady_clock::now();
  auto a = compiler.submit(bomb, budget);
  auto b = compiler.submit(second, budget);
  const CompileOutcome& first = a.get();
  const CompileOutcome& queued = b.get();
  const double wall = seconds_since(start);
  std::cout << "[ measure ] template bomb, " << kBudget << " s budget: " << first.seconds
            << " s, both modules " << wall << " s\n";
  EXPECT_EQ(first.failure, schema::FailureClass::COMPILE_TIMEOUT) << first.log_excerpt;
  ASSERT_EQ(first.tiers.size(), 1u) << first.log_excerpt;  // no other header tier
  EXPECT_NE(first.log_excerpt.find("ran out in tier " + first.tiers[0]), std::string::npos)
      << first.log_excerpt;
  EXPECT_LT(first.seconds - first.memory_wait_seconds, kBudget + 10);
  EXPECT_EQ(queued.failure, schema::FailureClass::COMPILE_TIMEOUT) << queued.log_excerpt;
  EXPECT_TRUE(queued.tiers.empty()) << queued.log_excerpt;
  EXPECT_LT(wall, kBudget + 15);  // not one budget per module
}

// The host's /etc/passwd, lines long enough that finding one in an excerpt is no coincidence.
std::vector<std::string> host_passwd_lines() {
  std::vector<std::string> lines;
  std::istringstream in(read_file("/etc/passwd"));
  for (std::string line; std::getline(in, line);) {
    if (line.size() >= 8) lines.push_back(line);
  }
  return lines;
}

// A compiler that runs out of memory ends the build as resourceLimit, with no other tier; its
// excerpt keeps the candidate's own lines and none of a file it included from the host.
TEST_F(CompileTest, OutOfMemoryIsNotRetriedAndTheExcerptQuotesNoHostFile) {
  auto exts = sources_of("honest/template_scale.py");
  ASSERT_EQ(exts.size(), 1u);
  ExtensionSources bomb = exts[0];
  bomb.cuda_sources = "#include \"/etc/passwd\"\n;\n" + bomb.cuda_sources + kTemplateBomb;
  CompileOptions o = options();
  o.memory_limit_mb = 1536;  // the bomb reaches it in seconds; a kernel alone needs far less
  // The header tiers alone: a split build's plain errors fall through by design, and the split
  // puts the include in both files.
  o.split_host_device = false;
  o.timeout_seconds = 300;
  Compiler compiler(*toolchain_, o);
  CompileOutcome out = compiler.compile(bomb);
  std::cout << "[ measure ] memory bomb, 1536 MiB: " << out.seconds << " s\n";
  EXPECT_EQ(out.failure, schema::FailureClass::RESOURCE_LIMIT) << out.log_excerpt;
  EXPECT_EQ(out.tiers, std::vector<std::string>{"lean"}) << out.log_excerpt;
  // The candidate's own text (binding.h names it cuda_sources) is quoted.
  EXPECT_NE(out.log_excerpt.find("Bomb"), std::string::npos) << out.log_excerpt;
  EXPECT_NE(out.log_excerpt.find("/etc/passwd"), std::string::npos) << out.log_excerpt;
  const std::vector<std::string> passwd = host_passwd_lines();
  ASSERT_FALSE(passwd.empty());
  for (const auto& line : passwd) {
    EXPECT_EQ(out.log_excerpt.find(line), std::string::npos) << line << "\n" << out.log_excerpt;
  }
}

// An endless #include (/dev/zero) ends within the budget: the preprocessor runs out of memory
// (resourceLimit, no other tier). Where the compiler's root has no /dev/zero it is a plain error.
TEST_F(CompileTest, EndlessIncludeEndsWithinTheBudget) {
  auto exts = sources_of("honest/template_scale.py");
  ASSERT_EQ(exts.size(), 1u);
  ExtensionSources endless = exts[0];
  endless.cuda_sources = "#include \"/dev/zero\"\n" + endless.cuda_sources;
  CompileOptions o = options();
  o.memory_limit_mb = 1536;
  o.split_host_device = false;
  constexpr double kBudget = 90;
  o.timeout_seconds = kBudget;
  Compiler compiler(*toolchain_, o);
  CompileOutcome out = compiler.compile(endless);
  std::cout << "[ measure ] #include /dev/zero, 1536 MiB: " << out.seconds << " s\n";
  EXPECT_LT(out.seconds - out.memory_wait_seconds, kBudget + 10);
  if (out.log_excerpt.find("No such file") != std::string::npos) {
    EXPECT_EQ(out.failure, schema::FailureClass::COMPILE_ERROR) << out.log_excerpt;
  } else {
    EXPECT_EQ(out.failure, schema::FailureClass::RESOURCE_LIMIT) << out.log_excerpt;
    EXPECT_EQ(out.tiers, std::vector<std::string>{"lean"}) << out.log_excerpt;
  }
}

// The filter on real compilers' output (both formats): nvcc and g++ in the sandbox on sources that
// include /etc/passwd, as a build's compilers run them.
TEST_F(CompileTest, ExcerptOfRealCompilersQuotesNoHostFile) {
  const std::vector<std::string> passwd = host_passwd_lines();
  ASSERT_FALSE(passwd.empty());
  const std::string source =
      "#include \"/etc/passwd\"\n;\nint own_line_marker = undefined_own_name;\n";
  for (const bool nvcc : {true, false}) {
    SandboxSpec spec;
    spec.timeout_seconds = 120;
    spec.memory_limit_mb = 8192;
    spec.max_processes = 256;
    const std::string file = nvcc ? "kernels.cu" : "binding.cpp";
    spec.files = {{file, source}};
    spec.argv = nvcc ? std::vector<std::string>{toolchain_->nvcc,
                                                "-c",
                                                file,
                                                "-o",
                                                "k.o",
                                                "-std=c++17",
                                                "-gencode=arch=compute_90,code=sm_90"}
                     : std::vector<std::string>{toolchain_->cxx, "-c", file, "-o", "b.o"};
    Result<SandboxResult> run = run_sandboxed(spec);
    ASSERT_TRUE(run.ok()) << run.status().to_string();
    const std::string output = run->stderr_text + run->stdout_text;
    ASSERT_NE(output.find("/etc/passwd"), std::string::npos) << output;
    CompileLogPolicy policy;
    policy.build_dir = "/nonexistent/build";  // the diagnostics name the files relatively
    const std::string excerpt = compiler_log_excerpt(output, policy, 20);
    for (const auto& line : passwd) {
      EXPECT_EQ(excerpt.find(line), std::string::npos) << file << ": " << line << "\n" << excerpt;
    }
    EXPECT_NE(excerpt.find("[line of /etc/passwd omitted]"), std::string::npos) << excerpt;
    EXPECT_NE(excerpt.find("undefined_own_name"), std::string::npos) << excerpt;
    EXPECT_NE(excerpt.find("own_line_marker"), std::string::npos) << excerpt;  // its own line
  }
}

// A build larger than max_module_mb is the candidate's resourceLimit and never enters the cache
// (issue 49: a 450 MB module was published and kept); a build hit again is touched, so that
// eviction (compile_cache.h) sees it as used.
TEST_F(CompileTest, ABuildOverTheModuleLimitIsAResourceLimitAndNotCached) {
  auto exts = sources_of("honest/template_scale.py");
  ASSERT_EQ(exts.size(), 1u);
  ExtensionSources big = exts[0];
  // 2 MiB of initialised device memory: in the module's fat binary.
  big.cuda_sources += "\n__device__ float dice_big_table[1 << 19] = {1.0f};\n";
  CompileOptions limited = options();
  limited.max_module_mb = 1;
  Compiler compiler(*toolchain_, limited);
  CompileOutcome out = compiler.compile(big);
  EXPECT_EQ(out.failure, schema::FailureClass::RESOURCE_LIMIT) << out.log_excerpt;
  EXPECT_NE(out.log_excerpt.find("over the limit of 1 MiB"), std::string::npos) << out.log_excerpt;
  EXPECT_FALSE(fs::exists(cache_dir_ / out.source_hash)) << "the build was cached";
  for (const auto& e : fs::directory_iterator(cache_dir_)) {
    EXPECT_EQ(e.path().filename().string().find(".build-"), std::string::npos) << e.path();
  }
  CompileOutcome small = compiler.compile(exts[0]);
  ASSERT_EQ(small.failure, schema::FailureClass::NONE) << small.log_excerpt;
  const fs::path entry = fs::path(small.module_path).parent_path();
  fs::last_write_time(entry, fs::last_write_time(entry) - std::chrono::hours(5));
  const auto before_hit = fs::last_write_time(entry);
  EXPECT_TRUE(compiler.compile(exts[0]).cache_hit);
  EXPECT_GT(fs::last_write_time(entry), before_hit + std::chrono::hours(4));
}

TEST_F(CompileTest, DynamicSourcesAreRefused) {
  SandboxSpec spec;
  auto ext = extract_extension_sources(
      "from torch.utils.cpp_extension import load_inline\n"
      "src = open('k.cu').read()\n"
      "ext = load_inline(name='e', cpp_sources='', cuda_sources=src, functions=['f'])\n",
      kPython, DICE_REWARD_PYTHON_DIR, spec);
  ASSERT_FALSE(ext.ok());
  EXPECT_EQ(ext.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(ext.status().message().find("line 3: cuda_sources: `src` is not a static string"),
            std::string::npos)
      << ext.status().message();
}

// extract_sources.py runs on files the static check passed. Its reading of `a + b + ...` recursed
// once per term, so a concatenation of ~1,000 strings (a file Python compiles, and the static
// check passes) made it fail with RecursionError: an internal error instead of the sources.
TEST(ExtractSourcesTest, LongConcatenationsAreStaticStrings) {
  std::string padding = "pad = \"\"";
  for (int i = 0; i < 2000; ++i) padding += " + \"// line\\n\"";
  auto ext = extract_extension_sources(
      "from torch.utils.cpp_extension import load_inline\n" + padding +
          "\nsrc = pad + '__global__ void k() {}'\n"
          "ext = load_inline(name='e', cpp_sources='', cuda_sources=src, functions=['f'])\n",
      kPython, DICE_REWARD_PYTHON_DIR, SandboxSpec());
  ASSERT_TRUE(ext.ok()) << ext.status().to_string();
  ASSERT_EQ(ext->size(), 1u);
  EXPECT_NE((*ext)[0].cuda_sources.find("// line\n// line\n__global__ void k() {}"),
            std::string::npos);
}

// A string plus a list is a TypeError when the file runs: not a static string, and not a crash of
// the reader (it was: Python's TypeError inside extract_sources.py).
TEST(ExtractSourcesTest, StringPlusListIsNotStatic) {
  auto ext = extract_extension_sources(
      "from torch.utils.cpp_extension import load_inline\n"
      "parts = ['__global__ void k() {}']\n"
      "src = '// k\\n' + parts\n"
      "ext = load_inline(name='e', cpp_sources='', cuda_sources=src, functions=['f'])\n",
      kPython, DICE_REWARD_PYTHON_DIR, SandboxSpec());
  ASSERT_FALSE(ext.ok());
  EXPECT_EQ(ext.status().code(), StatusCode::kInvalidArgument) << ext.status().to_string();
}

// A load_inline call with `flags` (a Python list literal) as its argument `key`.
Result<std::vector<ExtensionSources>> extract_with_flags(const std::string& key,
                                                         const std::string& flags) {
  return extract_extension_sources(
      "from torch.utils.cpp_extension import load_inline\n"
      "ext = load_inline(name='e', cpp_sources='', cuda_sources='__global__ void k() {}',\n"
      "                  functions=['f'], " +
          key + "=" + flags + ")\n",
      kPython, DICE_REWARD_PYTHON_DIR, SandboxSpec());
}

// nvcc hands its host steps to /bin/sh with the flags in the command text (issue 49: a -D flag
// holding shell syntax reached the shell). Flags are read by an exact allow-list: anything else,
// and anything a shell would read, is the candidate's compile error naming the flag.
TEST(ExtractSourcesTest, FlagsOutsideTheAllowListAreRefusedByName) {
  const std::vector<std::pair<std::string, std::string>> refused = {
      {"extra_cuda_cflags", "-DX=$(touch /tmp/dice-pwned)"},
      {"extra_cuda_cflags", "-DX=`id`"},
      {"extra_cuda_cflags", "-DX=1;id"},
      {"extra_cuda_cflags", "-DX=1|id"},
      {"extra_cuda_cflags", "-DX=1 -o/tmp/x"},
      {"extra_cuda_cflags", "-DX=\\\"a\\\""},
      {"extra_cuda_cflags", "-ccbin=/bin/sh"},
      {"extra_cuda_cflags", "--compiler-bindir=/tmp"},
      {"extra_cuda_cflags", "-Xcompiler=-fplugin=/tmp/p.so"},
      {"extra_cuda_cflags", "@/tmp/options"},
      {"extra_cuda_cflags", "-I/etc"},
      {"extra_cflags", "-DX=$(id)"},
      {"extra_cflags", "-include/etc/passwd"},
      {"extra_cflags", "-O3;id"},
      {"extra_ldflags", "-Wl,-rpath,/tmp"},
      {"extra_ldflags", "/tmp/evil.so"},
  };
  for (const auto& [key, flag] : refused) {
    const std::string honest = key == "extra_ldflags" ? "-lcublas" : "-O3";
    auto ext = extract_with_flags(key, "['" + honest + "', '" + flag + "']");
    ASSERT_FALSE(ext.ok()) << key << " " << flag;
    EXPECT_EQ(ext.status().code(), StatusCode::kInvalidArgument) << ext.status().to_string();
    std::string unescaped = flag;
    for (size_t at; (at = unescaped.find("\\\"")) != std::string::npos;) unescaped.erase(at, 1);
    EXPECT_NE(ext.status().message().find(key + ": flag "), std::string::npos)
        << ext.status().message();
    EXPECT_NE(ext.status().message().find(unescaped), std::string::npos) << ext.status().message();
  }
}

// What honest candidates pass: kept in order (two-part options joined), or dropped where the
// worker decides (architectures, verbosity, the libraries it links anyway).
TEST(ExtractSourcesTest, HonestFlagsAreKeptOrDropped) {
  auto ext = extract_with_flags(
      "extra_cuda_cflags",
      "['-O3', '--use_fast_math', '-DBLOCK=256', '-DSCALE=0.5f', '-U__CUDA_NO_HALF_OPERATORS__',"
      " '-lineinfo', '-std=c++17', '-arch=sm_80', '-gencode', 'arch=compute_90,code=sm_90',"
      " '-Xptxas', '-v', '-Xptxas=-O3', '--expt-relaxed-constexpr', '-maxrregcount=64'],"
      " extra_cflags=['-O3', '-fopenmp'], extra_ldflags=['', '-lcublas', '-lcudart']");
  ASSERT_TRUE(ext.ok()) << ext.status().to_string();
  ASSERT_EQ(ext->size(), 1u);
  const ExtensionSources& e = (*ext)[0];
  EXPECT_EQ(
      e.extra_cuda_cflags,
      (std::vector<std::string>{"-O3", "--use_fast_math", "-DBLOCK=256", "-DSCALE=0.5f",
                                "-U__CUDA_NO_HALF_OPERATORS__", "-lineinfo", "-std=c++17",
                                "-Xptxas=-O3", "--expt-relaxed-constexpr", "-maxrregcount=64"}));
  EXPECT_EQ(e.extra_cflags, std::vector<std::string>{"-O3"});
  EXPECT_EQ(e.extra_ldflags, std::vector<std::string>{"-lcublas"});
}

// Whatever reaches the compiler, a flag a shell would read stops the build before any compiler
// starts (no tier is tried); honest flags build.
TEST_F(CompileTest, AFlagAShellWouldReadStopsTheBuildBeforeAnyCompiler) {
  auto exts = sources_of("honest/template_scale.py");
  ASSERT_EQ(exts.size(), 1u);
  Compiler compiler(*toolchain_, options());
  for (const std::string flag : {"-DX=$(echo dice-pwned >&2)", "-DX=`id`", "-DX=1;id"}) {
    ExtensionSources hostile = exts[0];
    hostile.extra_cuda_cflags = {"-O3", flag};
    CompileOutcome out = compiler.compile(hostile);
    EXPECT_EQ(out.failure, schema::FailureClass::COMPILE_ERROR) << flag;
    EXPECT_TRUE(out.tiers.empty()) << flag << ": a compiler ran";
    EXPECT_NE(out.log_excerpt.find("flag '" + flag + "' is not allowed"), std::string::npos)
        << out.log_excerpt;
    ExtensionSources hostile_cxx = exts[0];
    hostile_cxx.extra_cflags = {flag};
    EXPECT_TRUE(compiler.compile(hostile_cxx).tiers.empty()) << flag;
  }
  ExtensionSources honest = exts[0];
  honest.extra_cuda_cflags = {"-O3", "--use_fast_math", "-DBLOCK=256", "-lineinfo"};
  honest.extra_cflags = {"-O3"};
  CompileOutcome built = compiler.compile(honest);
  EXPECT_EQ(built.failure, schema::FailureClass::NONE) << built.log_excerpt;
}

TEST(TrimCompilerLogTest, KeepsErrorLinesAndTheirContext) {
  std::string log =
      "kernels.cu(3): warning: unused\n"
      "kernels.cu(5): error: identifier \"q\" is undefined\n"
      "    y[i] = q;\n"
      "note: something\n"
      "kernels.cu(9): error: expected a \";\"\n"
      "    }\n"
      "2 errors detected in the compilation of \"kernels.cu\".\n";
  std::string trimmed = trim_compiler_log(log, 20);
  EXPECT_EQ(trimmed,
            "kernels.cu(5): error: identifier \"q\" is undefined\n    y[i] = q;\n"
            "kernels.cu(9): error: expected a \";\"\n    }\n"
            "2 errors detected in the compilation of \"kernels.cu\".");
  EXPECT_EQ(trim_compiler_log(log, 1), "kernels.cu(5): error: identifier \"q\" is undefined");
  EXPECT_EQ(trim_compiler_log("ld: cannot find -lfoo\n", 5), "ld: cannot find -lfoo");
}

TEST(ToolchainTest, ArchFromComputeCap) {
  EXPECT_EQ(arch_from_compute_cap("9.0"), "sm_90");
  EXPECT_EQ(arch_from_compute_cap("12.0"), "sm_120");
  EXPECT_EQ(arch_from_compute_cap(""), "");
  EXPECT_EQ(arch_from_compute_cap("9"), "");
  EXPECT_EQ(arch_from_compute_cap("x.0"), "");
}

}  // namespace
}  // namespace dice
