// The split of cuda_sources into a device unit and a host part (reward/compile/split_sources.h) on
// hand-written sources: what the tokenizer must not be fooled by, where each item goes, how
// launches become stub calls, and each case the split refuses. No compiler runs here; the real
// compiles are in compile_test.cc.
#include "reward/compile/split_sources.h"

#include <gtest/gtest.h>

#include "reward/compile/cuda_tokens.h"

namespace dice {
namespace {

ExtensionSources extension(const std::string& cuda, const std::string& cpp = "",
                           std::vector<std::string> functions = {"run"}) {
  ExtensionSources ext;
  ext.name = "ext";
  ext.cuda_sources = cuda;
  ext.cpp_sources = cpp.empty() ? "torch::Tensor run(torch::Tensor x);" : cpp;
  ext.functions = std::move(functions);
  return ext;
}

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// The split of `cuda`, failing the test when it does not apply.
SplitSources split_of(const std::string& cuda) {
  Result<SplitSources> s = split_host_device(extension(cuda));
  EXPECT_TRUE(s.ok()) << s.status().to_string();
  return s.ok() ? s.value() : SplitSources{};
}

// Why the split of `ext` does not apply; "" (and a test failure) when it does.
std::string refusal(const ExtensionSources& ext) {
  Result<SplitSources> s = split_host_device(ext);
  EXPECT_FALSE(s.ok()) << "split applied to:\n" << ext.cuda_sources;
  return s.ok() ? "" : s.status().message();
}

TEST(CudaTokensTest, CommentsLiteralsAndDirectivesHideTheirBracketsAndLaunches) {
  const std::string src =
      "// a } and k<<<1, 1>>>() in a comment\n"
      "/* { <<< */ const char* s = \"}{ <<< \\\" \";\n"
      "const char* r = R\"x(raw ) } \" <<<)x\";\n"
      "char c = '}'; char q = '\\'';\n"
      "#define M(a) \\\n  { a }\n"
      "int n = 1'000;\n";
  auto tokens = tokenize_cuda(src);
  ASSERT_TRUE(tokens.ok()) << tokens.status().to_string();
  for (const auto& t : *tokens) {
    EXPECT_NE(t.text, "<<<") << "line " << t.line;
    if (t.kind == CudaToken::kPunct) {
      EXPECT_NE(t.text, "}") << "line " << t.line;
    }
  }
  auto items = split_top_level(*tokens);
  ASSERT_TRUE(items.ok()) << items.status().to_string();
  ASSERT_EQ(items->size(), 6u);  // s, r, c, q, the #define, n
  EXPECT_TRUE((*items)[4].directive);
  EXPECT_EQ(directive_name((*tokens)[(*items)[4].first]), "define");
  EXPECT_EQ((*tokens)[(*items)[5].first].line, 7);
}

TEST(CudaTokensTest, ClassBodiesAndInitializersRunToTheirSemicolon) {
  auto tokens = tokenize_cuda(
      "struct P { float x; };\n"
      "struct __align__(8) Q { float a, b; } q0;\n"
      "int table[] = {1, 2};\n"
      "namespace ns { int f() { return 1; } }\n"
      "struct P make() { return P{1}; }\n"
      "void g() {}\n");
  ASSERT_TRUE(tokens.ok());
  auto items = split_top_level(*tokens);
  ASSERT_TRUE(items.ok()) << items.status().to_string();
  ASSERT_EQ(items->size(), 6u);
  EXPECT_FALSE((*items)[0].has_body);
  EXPECT_FALSE((*items)[1].has_body);
  EXPECT_FALSE((*items)[2].has_body);
  EXPECT_TRUE((*items)[3].has_body);
  EXPECT_TRUE((*items)[4].has_body);
  EXPECT_TRUE((*items)[5].has_body);
}

TEST(CudaTokensTest, UnterminatedInputFails) {
  EXPECT_FALSE(tokenize_cuda("/* never closed").ok());
  EXPECT_FALSE(tokenize_cuda("const char* s = \"never closed;\n").ok());
  auto tokens = tokenize_cuda("void f() { if (x) {");
  ASSERT_TRUE(tokens.ok());
  EXPECT_FALSE(split_top_level(*tokens).ok());
}

// A kernel file with everything at once: the typical shape of candidates, plus the tricky bits.
constexpr char kTricky[] = R"(#include <torch/extension.h>
#include <cuda_fp16.h>
#include <ATen/cuda/CUDAContext.h>
#define THREADS 256
// a comment with } and scale<<<1, 1>>>(x) in it
struct Pair { float a; float b; };
constexpr int kUnroll = 4;
typedef float real;
__host__ __device__ inline int cdiv(int a, int b) { return (a + b - 1) / b; }
__device__ float twice(float v) { return 2 * v; }
__global__ void scale(const real* __restrict__ x, real* y, Pair p, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = twice(x[i]) * p.a + p.b + kUnroll * 0;
}
__global__ void fill(float* y, int n, float v = 1.0f) {
  const char* s = "}";  // a brace in a string
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n && s[0] == '}') y[i] = v;
}
torch::Tensor run(torch::Tensor x) {
  auto y = torch::empty_like(x);
  int n = x.numel();
  Pair p{2.0f, 1.0f};
  scale<<<cdiv(n, THREADS), THREADS>>>(x.data_ptr<float>(), y.data_ptr<float>(), p, n);
  for (int r = 0; r < 2; ++r)
    fill<<<dim3(cdiv(n, THREADS)), dim3(THREADS), 0>>>(y.data_ptr<float>(), n);
  fill<<<1, 1, 0, at::cuda::getCurrentCUDAStream()>>>(
      y.data_ptr<float>(),
      n, 3.0f);
  return y;
}
)";

TEST(SplitSourcesTest, KernelsAndTheirHelpersGoToTheDeviceUnitWithoutTorch) {
  SplitSources s = split_of(kTricky);
  EXPECT_EQ(s.kernels, 2);
  EXPECT_EQ(s.launches, 3);
  const std::string& d = s.device_unit;
  EXPECT_EQ(d.find("torch"), std::string::npos) << d;
  EXPECT_EQ(d.find("ATen"), std::string::npos) << d;
  EXPECT_NE(d.find("#include <cuda_fp16.h>"), std::string::npos);
  EXPECT_NE(d.find("#define THREADS 256"), std::string::npos);
  EXPECT_NE(d.find("struct Pair"), std::string::npos);  // a kernel parameter's type
  EXPECT_NE(d.find("constexpr int kUnroll"), std::string::npos);
  EXPECT_NE(d.find("typedef float real;"), std::string::npos);
  EXPECT_NE(d.find("__device__ float twice"), std::string::npos);
  EXPECT_EQ(count(d, "run("), 0u);  // no host code
  // One stub per kernel, forwarding the kernel's own parameters with the full configuration.
  EXPECT_NE(d.find("void dice_split_launch_scale(dim3 dice_split_grid, dim3 dice_split_block, "
                   "size_t dice_split_shmem, cudaStream_t dice_split_stream, const real * "
                   "__restrict__ x, real * y, Pair p, int n) {\n  scale<<<dice_split_grid, "
                   "dice_split_block, dice_split_shmem, dice_split_stream>>>(x, y, p, n);"),
            std::string::npos)
      << d;
  EXPECT_NE(d.find("int n, float v = 1.0f) {\n  fill<<<"), std::string::npos) << d;
  EXPECT_NE(d.find("#line 11 \"cuda_sources\"\n__global__ void scale"), std::string::npos);
}

TEST(SplitSourcesTest, HostCodeCallsTheStubsWithTheLaunchDefaults) {
  SplitSources s = split_of(kTricky);
  const std::string& h = s.host_part;
  EXPECT_EQ(h.find("__global__"), std::string::npos) << h;
  EXPECT_EQ(h.find("<<<"), std::string::npos) << h;
  EXPECT_EQ(h.find("twice"), std::string::npos) << h;  // device-only helper
  EXPECT_EQ(h.find("torch/extension.h"), std::string::npos) << h;
  EXPECT_NE(h.find("#include <cuda_runtime.h>"), std::string::npos);
  EXPECT_NE(h.find("#include <ATen/cuda/CUDAContext.h>"), std::string::npos);
  EXPECT_NE(h.find("\n__host__ __device__ inline int cdiv"), std::string::npos) << h;
  EXPECT_NE(h.find("struct Pair"), std::string::npos);
  // Stub declarations where the kernels were, with the parameters as written (defaults too).
  EXPECT_NE(h.find("void dice_split_launch_fill(dim3 dice_split_grid, dim3 dice_split_block, "
                   "size_t dice_split_shmem, cudaStream_t dice_split_stream, float* y, int n, "
                   "float v = 1.0f);"),
            std::string::npos)
      << h;
  EXPECT_NE(h.find("dice_split_launch_scale(cdiv(n, THREADS), THREADS, 0, 0, x.data_ptr<float>(), "
                   "y.data_ptr<float>(), p, n);"),
            std::string::npos)
      << h;
  EXPECT_NE(h.find("    dice_split_launch_fill(dim3(cdiv(n, THREADS)), dim3(THREADS), 0, 0, "
                   "y.data_ptr<float>(), n);"),
            std::string::npos)
      << h;
  EXPECT_NE(h.find("dice_split_launch_fill(1, 1, 0, at::cuda::getCurrentCUDAStream(), "
                   "y.data_ptr<float>(),\n      n, 3.0f)\n;"),
            std::string::npos)
      << h;
  // The line after the multi-line launch keeps its number.
  const size_t run_at = h.find("#line 20 \"cuda_sources\"\ntorch::Tensor run(");
  ASSERT_NE(run_at, std::string::npos) << h;
  const size_t ret = h.find("  return y;", run_at);
  const std::string before = h.substr(run_at, ret - run_at);
  EXPECT_EQ(count(before, "\n") - 1, 30u - 20u) << before;
}

TEST(SplitSourcesTest, KernelsWithoutLaunchConfigurationDefaultsAndUnnamedParameters) {
  SplitSources s = split_of(
      "__global__ void k(float*, int) {}\n"
      "__global__ void e(void) {}\n"
      "void run() { k<<<1, 2, 3>>>(nullptr, 1); e<<<1, 1>>>(); }\n");
  EXPECT_NE(s.device_unit.find("float * dice_split_p0, int dice_split_p1) {\n  k<<<"),
            std::string::npos)
      << s.device_unit;
  EXPECT_NE(s.device_unit.find(">>>(dice_split_p0, dice_split_p1);"), std::string::npos);
  EXPECT_NE(s.device_unit.find("cudaStream_t dice_split_stream) {\n  e<<<"), std::string::npos);
  EXPECT_NE(s.host_part.find("dice_split_launch_k(1, 2, 3, 0, nullptr, 1);"), std::string::npos);
  EXPECT_NE(s.host_part.find("dice_split_launch_e(1, 1, 0, 0);"), std::string::npos);
}

// Headers g++ cannot read, and names only device code uses, stay on the device side.
TEST(SplitSourcesTest, DeviceOnlyHeadersAndNamespaceAliasesStayOnTheDeviceSide) {
  SplitSources s = split_of(
      "#include <cooperative_groups.h>\n"
      "namespace cg = cooperative_groups;\n"
      "__global__ void k(float* x) { cg::this_thread_block().sync(); }\n"
      "void run() { k<<<1, 1>>>(nullptr); }\n");
  EXPECT_NE(s.device_unit.find("#include <cooperative_groups.h>"), std::string::npos);
  EXPECT_NE(s.device_unit.find("namespace cg = cooperative_groups;"), std::string::npos);
  EXPECT_EQ(s.host_part.find("cooperative_groups"), std::string::npos) << s.host_part;
}

// A class template's specializations go wherever the template goes: without them the device
// unit's primary template recurses past its base case (a plain compile error that would send
// the build on to the next header tier).
TEST(SplitSourcesTest, SpecializationsFollowTheirTemplate) {
  SplitSources s = split_of(
      "template <int D, long I> struct Sum {\n"
      "  static constexpr long v = Sum<D - 1, 2 * I>::v + Sum<D - 1, 2 * I + 1>::v;\n};\n"
      "template <long I> struct Sum<0, I> { static constexpr long v = I; };\n"
      "template <> struct Sum<1, 7> final { static constexpr long v = 0; };\n"
      "__global__ void k(long* out) { *out = Sum<3, 0>::v; }\n"
      "void run() { k<<<1, 1>>>(nullptr); }\n");
  EXPECT_NE(s.device_unit.find("struct Sum<0, I>"), std::string::npos) << s.device_unit;
  EXPECT_NE(s.device_unit.find("struct Sum<1, 7> final"), std::string::npos) << s.device_unit;
  EXPECT_EQ(s.host_part.find("Sum"), std::string::npos) << s.host_part;
}

TEST(SplitSourcesTest, DeviceCodeWithHalfGetsC10Headers) {
  SplitSources s = split_of(
      "__global__ void h(at::Half* x) { x[0] = x[0]; }\n"
      "void run(torch::Tensor t) { h<<<1, 1>>>(t.data_ptr<at::Half>()); }\n");
  EXPECT_NE(s.device_unit.find("#include <c10/util/Half.h>"), std::string::npos);
  EXPECT_NE(s.device_unit.find("namespace at { using c10::Half;"), std::string::npos);
}

TEST(SplitSourcesTest, RefusesWhatItCannotKeepTheMeaningOf) {
  const std::string launch = "void run() { k<<<1, 1>>>(nullptr); }\n";
  const std::string kernel = "__global__ void k(float* x) {}\n";
  struct Case {
    std::string source;
    std::string why;
  };
  const std::vector<Case> cases = {
      {"template <typename T> __global__ void k(T* x) {}\n"
       "void run() { k<float><<<1, 1>>>(nullptr); }\n",
       "template kernel"},
      {kernel + "void run() { cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize,"
                " 1); k<<<1, 1>>>(nullptr); }\n",
       "other than launching it"},
      {kernel + "void run() { void (*f)(float*) = k; }\n", "other than launching it"},
      {"__constant__ float w[4];\n" + kernel +
           "void run() { cudaMemcpyToSymbol(w, nullptr, 16); k<<<1, 1>>>(nullptr); }\n",
       "host code names w"},
      {kernel + "#define LAUNCH(n) k<<<n, 1>>>(nullptr)\nvoid run() { LAUNCH(1); }\n",
       "a launch in a macro"},
      {kernel + "#define CHECK(x) x\nvoid run() { CHECK(k<<<1, 1>>>(nullptr)); }\n",
       "inside parentheses"},
      {kernel + "#ifdef FOO\n#endif\n" + launch, "#ifdef"},
      {kernel + "void run() {\n#ifdef FOO\n#endif\n k<<<1, 1>>>(nullptr); }\n", "#ifdef"},
      {"__global__ void k(float* x) { x[0] = at::native::foo(); }\n" + launch, "at::native"},
      {"__global__ void k(float* x) { TORCH_CHECK(x); }\n" + launch, "TORCH_CHECK"},
      {"namespace n { __global__ void k(float* x) {} }\nvoid run() { n::k<<<1, 1>>>(nullptr); }\n",
       "namespace"},
      {"__global__ void k(float* x) {}\n__global__ void k(int* x) {}\n" + launch, "overloaded"},
      {"__global__ void k(float* x, ...) {}\n" + launch, "kernel parameter"},
      {kernel + "#define CFG 1, 1\nvoid run() { k<<<CFG>>>(nullptr); }\n", "macro CFG"},
      {kernel + "void run() { k<<<1>>>(nullptr); }\n", "1 configuration arguments"},
      {kernel + "void run() { k<<<f<1, 2>(), 1>>>(nullptr); }\n", "'<' in a launch"},
      {"void run() {}\n", "no kernels"},
      {"void run() { other<<<1, 1>>>(); }\n__global__ void k(float* x) {}\n",
       "something other than a kernel"},
  };
  for (const auto& c : cases) {
    const std::string why = refusal(extension(c.source));
    EXPECT_NE(why.find(c.why), std::string::npos) << why << "\nfor:\n" << c.source;
  }
}

TEST(SplitSourcesTest, RefusesFlagsAndCppSourcesThatWouldChangeTheHostCode) {
  const std::string src =
      "__global__ void k(float* x) {}\nint helper() { return 1; }\n"
      "void run() { k<<<helper(), 1>>>(nullptr); }\n";
  ExtensionSources flags = extension(src);
  flags.extra_cflags = {"-O2"};
  EXPECT_NE(refusal(flags).find("extra_cflags"), std::string::npos);
  flags = extension(src);
  flags.extra_cuda_cflags = {"-DFAST=1"};
  EXPECT_NE(refusal(flags).find("-DFAST=1"), std::string::npos);
  flags.extra_cuda_cflags = {"-O3", "--use_fast_math"};
  EXPECT_TRUE(split_host_device(flags).ok());

  EXPECT_NE(refusal(extension(src, "using namespace torch;\nvoid run();")).find("using namespace"),
            std::string::npos);
  // A declaration of cpp_sources that the host code would now see.
  EXPECT_NE(refusal(extension(src, "int helper(long);\nvoid run();")).find("helper"),
            std::string::npos);
  ExtensionSources macro = extension("#define run run2\n" + src);
  EXPECT_NE(refusal(macro).find("macro run"), std::string::npos);
  EXPECT_NE(refusal(extension(src, "#include <cublas_v2.h>\nvoid run();")).find("cublas_v2.h"),
            std::string::npos);
  EXPECT_TRUE(split_host_device(extension(src,
                                          "#include <torch/extension.h>\n#include <vector>\n"
                                          "void run();"))
                  .ok());
}

}  // namespace
}  // namespace dice
