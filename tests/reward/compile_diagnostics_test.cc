// read_compile_errors on real compiler output: nvcc 13.0 (EDG front end) and g++ 12.2 on the
// units the header tiers build (binding.h: the lean prelude in front of cuda_sources, the slim
// binding prelude in front of cpp_sources; split_sources.h: the device unit without torch), with
// the candidate's text under the #line names binding.h gives it. Each output below is a block
// those compilers printed for kCompiled (or the source named beside it), pasted unchanged.
#include "reward/compile/compile_diagnostics.h"

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "tests/support/temp_dir.h"

namespace dice {
namespace {

// One candidate with an error of each kind, one per function (compiled as a whole, the
// compilers reported every block below from it). Line 11's "(" is never closed, which decides
// alone (UnpairedBracketsDecideWhateverTheFirstError); the other blocks are read against
// kCandidate, the same text with that parenthesis closed.
constexpr char kCompiled[] = R"(struct Pair { int a; float b; };
__device__ float helper(float x, float y) { return x + y; }
int own_count(int n) { return n; }
void own_over(int* p);
void own_over(float* p);
__global__ void k_syntax(const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x
  if (i < n) y[i] = x[i];
}
__global__ void k_paren(const float* x, float* y, int n) {
  int i = (blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = x[i];
}
__global__ void k_typo(const float* x, float* y, int n) {
  int idx = blockIdx.x * blockDim.x + threadIdx.x;
  if (idxx < n) y[idx] = x[idx];
}
__global__ void k_member(const float* x, float* y, int n) {
  Pair p{1, 2.f};
  y[0] = p.c + x[0].size;
}
__global__ void k_args(const float* x, float* y, int n) {
  y[0] = helper(x[0], x[1], x[2]) + helper(x[0]);
}
__global__ void k_conv(const float* x, float* y, int n) {
  float* z = x;
  int* w = y;
  z[0] = w[0];
}
void host_calls(float* f, double* d) {
  own_over(d);
  own_count();
  k_syntax<<<1, 1>>>(f);
}
int own_count(int n) { return n + 1; }
struct Fwd;
void use_fwd() { Fwd f; }
void ret() { return 1.0; }
at::Tensor lean_missing(at::Tensor x) {
  return x.index({torch::indexing::Slice(0, 2)});
}
void stream_missing() { auto s = at::cuda::getCurrentCUDAStream(); (void)s; }
c10::optional<int> opt_missing() { return c10::nullopt; }
void tensor_member(at::Tensor t) { t.not_a_method(); }
)";

std::string replaced(std::string text, const std::string& from, const std::string& to) {
  for (size_t at = 0; (at = text.find(from, at)) != std::string::npos; at += to.size()) {
    text.replace(at, from.size(), to);
  }
  return text;
}

// kCompiled as g++ compiled it for the binding file: CUDA's keywords and launches taken out.
const std::string kCompiledHost =
    replaced(replaced(replaced(replaced(kCompiled, "__global__ ", ""), "__device__ ", ""),
                      "blockIdx.x * blockDim.x + threadIdx.x", "n"),
             "k_syntax<<<1, 1>>>(f)", "k_syntax(f)");

// Line 11's parenthesis closed.
const std::string kCandidate = replaced(kCompiled, "(blockIdx.x * blockDim.x + threadIdx.x;",
                                        "(blockIdx.x * blockDim.x + threadIdx.x);");
const std::string kCandidateHost = replaced(kCompiledHost, "int i = (n;", "int i = (n);");

ExtensionSources cuda(const std::string& source) {
  ExtensionSources ext;
  ext.name = "e";
  ext.cuda_sources = source;
  return ext;
}

ExtensionSources cpp(const std::string& source) {
  ExtensionSources ext;
  ext.name = "e";
  ext.cpp_sources = source;
  return ext;
}

CompileErrorReading nvcc_lean(const std::string& output, const std::string& source = kCandidate) {
  return read_compile_errors(output, cuda(source), DiagnosticsScope::kHeaders,
                             DiagnosticsCompiler::kNvcc);
}

CompileErrorReading gxx_slim(const std::string& output,
                             const std::string& source = kCandidateHost) {
  return read_compile_errors(output, cpp(source), DiagnosticsScope::kHeaders,
                             DiagnosticsCompiler::kHostCxx);
}

// The blocks nvcc printed for kCompiled behind the lean headers, and whether each is the
// candidate's own error (no heavier header could fix it).
struct Case {
  const char* output;
  bool own;
  const char* why;  // a part of the reading's reason
};

template <size_t N, typename Reader>
void expect_readings(const Case (&cases)[N], Reader read, const std::string& source) {
  for (const Case& c : cases) {
    const CompileErrorReading r = read(c.output, source);
    EXPECT_EQ(r.own_error, c.own) << c.output << "\n-> " << r.why;
    EXPECT_NE(r.why.find(c.why), std::string::npos) << c.output << "\n-> " << r.why;
  }
}

TEST(CompileDiagnosticsTest, NvccLeanTierBlocks) {
  const Case cases[] = {
      {"cuda_sources(8): error: expected a \";\"\n    if (i < n) y[i] = x[i];\n    ^\n\n", true,
       "syntax error at cuda_sources:8"},
      {"cuda_sources(11): error: expected a \")\"\n"
       "    int i = (blockIdx.x * blockDim.x + threadIdx.x;\n"
       "                                                  ^\n",
       true, "syntax error"},
      // A typo: no declaration of the candidate's has the name, and torch's might.
      {"cuda_sources(16): error: identifier \"idxx\" is undefined\n"
       "    if (idxx < n) y[idx] = x[idx];\n        ^\n",
       false, "not known"},
      {"cuda_sources(20): error: class \"Pair\" has no member \"c\"\n"
       "    y[0] = p.c + x[0].size;\n             ^\n",
       true, "own class Pair"},
      {"cuda_sources(20): error: expression must have class type but it has type \"const float\"\n"
       "    y[0] = p.c + x[0].size;\n                 ^\n",
       true, "built-in type const float"},
      {"cuda_sources(23): error: too many arguments in function call\n"
       "    y[0] = helper(x[0], x[1], x[2]) + helper(x[0]);\n"
       "                              ^\n",
       true, "own helper"},
      {"cuda_sources(23): error: too few arguments in function call\n"
       "    y[0] = helper(x[0], x[1], x[2]) + helper(x[0]);\n"
       "                                                 ^\n",
       true, "own helper"},
      {"cuda_sources(26): error: a value of type \"const float *\" cannot be used to initialize an "
       "entity of type \"float *\"\n    float* z = x;\n               ^\n",
       true, "conversion"},
      // An overload set: headers may add candidates.
      {"cuda_sources(31): error: no instance of overloaded function \"own_over\" matches the "
       "argument list\n            argument types are: (double *)\n    own_over(d);\n    ^\n"
       "cuda_sources(5): note #3326-D: function \"own_over(float *)\" does not match because "
       "argument #1 does not match parameter\n  void own_over(float* p);\n       ^\n",
       false, "not known"},
      {"cuda_sources(32): error: too few arguments in function call\n    own_count();\n"
       "              ^\n",
       true, "own own_count"},
      {"cuda_sources(33): error: too few arguments in function call\n"
       "    k_syntax<<<1, 1>>>(f);\n                        ^\n",
       true, "own k_syntax"},
      {"cuda_sources(35): error: function \"own_count\" has already been defined (previous "
       "definition at line 3)\n  int own_count(int n) { return n + 1; }\n      ^\n",
       true, "redefinition"},
      // Forward-declared only: a header could be where it is defined.
      {"cuda_sources(37): error: incomplete type \"Fwd\" is not allowed\n"
       "  void use_fwd() { Fwd f; }\n                       ^\n",
       false, "not known"},
      {"cuda_sources(38): error: return value type does not match the function type\n"
       "  void ret() { return 1.0; }\n                      ^\n",
       false, "not known"},
      // What the lean headers lack and the full ones have.
      {"cuda_sources(40): error: namespace \"at::indexing\" has no member \"Slice\"\n"
       "    return x.index({torch::indexing::Slice(0, 2)});\n"
       "                                     ^\n",
       false, "not known"},
      {"cuda_sources(42): error: namespace \"at::cuda\" has no member \"getCurrentCUDAStream\"\n"
       "  void stream_missing() { auto s = at::cuda::getCurrentCUDAStream(); (void)s; }\n"
       "                                             ^\n",
       false, "not known"},
      {"cuda_sources(44): error: class \"at::Tensor\" has no member \"not_a_method\"\n"
       "  void tensor_member(at::Tensor t) { t.not_a_method(); }\n"
       "                                       ^\n",
       false, "not known"},
  };
  expect_readings(cases, nvcc_lean, kCandidate);
}

// g++ on kCompiledHost as cpp_sources (the binding file behind the slim headers), in the C
// locale's quotes and in a UTF-8 locale's.
TEST(CompileDiagnosticsTest, GxxSlimBindingBlocks) {
  const Case cases[] = {
      {"cpp_sources: In function 'void k_syntax(const float*, float*, int)':\n"
       "cpp_sources:8:3: error: expected ',' or ';' before 'if'\n",
       true, "syntax error at cpp_sources:8"},
      {"cpp_sources:16:7: error: 'idxx' was not declared in this scope; did you mean 'idx'?\n",
       false, "not known"},
      {"cpp_sources:20:12: error: 'struct Pair' has no member named 'c'\n", true, "own class Pair"},
      {"cpp_sources:20:21: error: request for member 'size' in '* x', which is of non-class type "
       "'const float'\n",
       true, "built-in type const float"},
      {"cpp_sources:23:16: error: too many arguments to function 'float helper(float, float)'\n"
       "cpp_sources:2:7: note: declared here\n",
       true, "argument count"},
      {"cpp_sources:26:14: error: invalid conversion from 'const float*' to 'float*' "
       "[-fpermissive]\n",
       true, "conversion"},
      {"cpp_sources:27:12: error: cannot convert 'float*' to 'int*' in initialization\n", true,
       "conversion"},
      {"cpp_sources:31:11: error: no matching function for call to 'own_over(double*&)'\n"
       "cpp_sources:4:6: note: candidate: 'void own_over(int*)'\n",
       false, "not known"},
      {"cpp_sources: At global scope:\n"
       "cpp_sources:35:5: error: redefinition of 'int own_count(int)'\n"
       "cpp_sources:3:5: note: 'int own_count(int)' previously defined here\n",
       true, "redefinition"},
      {"cpp_sources:38:21: error: return-statement with a value, in function returning 'void' "
       "[-fpermissive]\n",
       true, "return statement"},
      {"cpp_sources:42:44: error: 'getCurrentCUDAStream' is not a member of 'at::cuda'\n", false,
       "not known"},
      {"cpp_sources:44:38: error: 'class at::Tensor' has no member named 'not_a_method'\n", false,
       "not known"},
      {"cpp_sources:20:12: error: \xe2\x80\x98struct Pair\xe2\x80\x99 has no member named "
       "\xe2\x80\x98"
       "c\xe2\x80\x99\n",
       true, "own class Pair"},
  };
  expect_readings(cases, gxx_slim, kCandidateHost);
}

// Brackets that do not pair up compile in no tier, whatever the first error says (most broken RL
// answers: `int threads = x128);`).
TEST(CompileDiagnosticsTest, UnpairedBracketsDecideWhateverTheFirstError) {
  const std::string typo_first =
      "cuda_sources(16): error: identifier \"idxx\" is undefined\n"
      "    if (idxx < n) y[idx] = x[idx];\n        ^\n";
  const CompileErrorReading r = nvcc_lean(typo_first, kCompiled);
  EXPECT_TRUE(r.own_error);
  EXPECT_EQ(r.why, "unpaired bracket at cuda_sources:11");
  EXPECT_FALSE(nvcc_lean(typo_first, kCandidate).own_error);
  const CompileErrorReading host = read_compile_errors(
      "binding.cpp:30:1: error: expected '}' at end of input\n", cpp("void f() {\n"),
      DiagnosticsScope::kSplit, DiagnosticsCompiler::kHostCxx);
  EXPECT_TRUE(host.own_error);
  EXPECT_EQ(host.why, "unpaired bracket at cpp_sources:1");
  // Brackets inside comments, literals and directives do not count; a #define holding an
  // unpaired one makes the count unknowable.
  const std::string quoted = "// (\nconst char* s = \"{\"; char c = '[';\n#pragma unroll (\n";
  EXPECT_FALSE(nvcc_lean(typo_first, quoted).own_error);
  EXPECT_FALSE(nvcc_lean(typo_first, "#define BEGIN {\nBEGIN int x; }\n").own_error);
  EXPECT_TRUE(nvcc_lean(typo_first, "int threads = x128);\n").own_error);
}

// The first error decides: later ones may follow from it, and a name the tier lacks can make the
// rest of its statement unparsable (g++'s 'expected primary-expression' after an undeclared
// template).
TEST(CompileDiagnosticsTest, TheFirstErrorDecides) {
  const std::string source =
      "int f1(Tensor x) { return 0; }\n"
      "void f2(Tensor x, int n) {}\n"
      "__global__ void C10_LAUNCH_BOUNDS_X(256) kern(float* x) {}\n"
      "void f3() { std::vector<int> v; Foo<int> w; }\n";
  const std::string gxx =
      "cpp_sources:1:8: error: 'Tensor' was not declared in this scope\n"
      "cpp_sources:2:6: error: variable or field 'f2' declared void\n"
      "cpp_sources:2:9: error: 'Tensor' was not declared in this scope\n"
      "cpp_sources:2:19: error: expected primary-expression before 'int'\n";
  EXPECT_FALSE(gxx_slim(gxx, source).own_error);
  // The same syntax error after an undeclared name on its line: both are read.
  const std::string gxx_f3 =
      "cpp_sources: In function 'void f3()':\n"
      "cpp_sources:4:18: error: 'vector' is not a member of 'std'\n"
      "cpp_sources:1:1: note: 'std::vector' is defined in header '<vector>'; did you forget to "
      "'#include <vector>'?\n"
      "cpp_sources:4:25: error: expected primary-expression before 'int'\n";
  EXPECT_FALSE(gxx_slim(gxx_f3, source).own_error);
  const std::string gxx_syntax_then_name =
      "cpp_sources:8:3: error: expected ',' or ';' before 'if'\n"
      "cpp_sources:16:7: error: 'idxx' was not declared in this scope; did you mean 'idx'?\n";
  EXPECT_TRUE(gxx_slim(gxx_syntax_then_name).own_error);
  const std::string gxx_name_then_syntax =
      "cpp_sources:4:33: error: 'Foo' was not declared in this scope\n"
      "cpp_sources:4:37: error: expected primary-expression before 'int'\n";
  EXPECT_FALSE(gxx_slim(gxx_name_then_syntax, source).own_error);
}

// An unknown macro in a declaration gives syntax errors and no lookup error (nvcc on line 3 of
// the source above): a macro-like name near a syntax error keeps the retry.
TEST(CompileDiagnosticsTest, SyntaxErrorNextToAnUnknownMacroRetries) {
  const std::string source = "__global__ void C10_LAUNCH_BOUNDS_X(256) kern(float* x) {}\n";
  const std::string nvcc =
      "cuda_sources(1): error: expected a \";\"\n"
      "  __attribute__((global)) void C10_LAUNCH_BOUNDS_X(256) kern(float* x) {}\n"
      "                                                        ^\n";
  const CompileErrorReading r = nvcc_lean(nvcc, source);
  EXPECT_FALSE(r.own_error);
  EXPECT_NE(r.why.find("C10_LAUNCH_BOUNDS_X"), std::string::npos) << r.why;
  // The candidate's own macros are known.
  const std::string defined =
      "#define MY_BOUNDS(n) __launch_bounds__(n)\n"
      "__global__ void MY_BOUNDS(256) kern(float* x) { x[0] = 1 }\n";
  EXPECT_TRUE(nvcc_lean("cuda_sources(2): error: expected a \";\"\n", defined).own_error);
  const std::string plain = "#define BLOCK 256\n__global__ void k(float* x) { x[0] = BLOCK }\n";
  EXPECT_TRUE(nvcc_lean("cuda_sources(2): error: expected a \";\"\n", plain).own_error);
  // g++ has no CUDA keywords of its own: __launch_bounds__ in cpp_sources may be a macro.
  const std::string host = "void __launch_bounds__(256) f() {}\n";
  EXPECT_FALSE(
      gxx_slim("cpp_sources:1:6: error: expected initializer before 'f'\n", host).own_error);
  EXPECT_TRUE(nvcc_lean("cuda_sources(1): error: expected a \";\"\n",
                        "__global__ void __launch_bounds__(256) k() { int a = 1 }\n")
                  .own_error);
  // A torch macro used bare anywhere (C10_HOST_DEVICE) may break the syntax far from itself.
  const std::string bare =
      "C10_HOST_DEVICE inline float sq(float v) { return v * v; }\n"
      "__global__ void k(float* x) { x[0] = sq(x[0]) }\n";
  EXPECT_FALSE(nvcc_lean("cuda_sources(2): error: expected a \";\"\n", bare).own_error);
}

// A conditional on a macro the candidate does not define may compile differently with heavier
// headers: no error decides.
TEST(CompileDiagnosticsTest, ConditionalsOnForeignMacrosRetry) {
  const std::string source =
      "#ifdef TORCH_HAS_THING\nint thing();\n#endif\n"
      "__global__ void k(float* x) { x[0] = 1 }\n";
  const CompileErrorReading r = nvcc_lean("cuda_sources(4): error: expected a \";\"\n", source);
  EXPECT_FALSE(r.own_error);
  EXPECT_NE(r.why.find("TORCH_HAS_THING"), std::string::npos) << r.why;
  const std::string own =
      "#ifndef BLOCK\n#define BLOCK 256\n#endif\n#if __CUDA_ARCH__ >= 800\n#endif\n"
      "__global__ void k(float* x) { x[0] = 1 }\n";
  EXPECT_TRUE(nvcc_lean("cuda_sources(6): error: expected a \";\"\n", own).own_error);
}

// Errors the candidate's text is not the place of: inside headers (a header the tier's
// include chain lacks), ptxas, an empty output.
TEST(CompileDiagnosticsTest, ErrorsOutsideTheCandidatesTextRetry) {
  const std::string in_header =
      "In file included from /usr/lib/python3/dist-packages/torch/include/c10/cuda/"
      "CUDAException.h:3,\n"
      "                 from cuda_sources:1:\n"
      "/usr/lib/python3/dist-packages/torch/include/c10/cuda/CUDAMacros.h:8:10: fatal error: "
      "c10/cuda/impl/cuda_cmake_macros.h: No such file or directory\n"
      "    8 | #include <c10/cuda/impl/cuda_cmake_macros.h>\n"
      "      |          ^~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~\n"
      "compilation terminated.\n";
  EXPECT_FALSE(nvcc_lean(in_header, "#include <ATen/cuda/CUDAContext.h>\n").own_error);
  EXPECT_FALSE(
      nvcc_lean("ptxas error   : Entry function 'k' uses too much shared data\n").own_error);
  EXPECT_FALSE(nvcc_lean("").own_error);
  EXPECT_FALSE(nvcc_lean("kernels.cu(3): error: expected a \";\"\n").own_error);
  // The candidate's own #include of a file that is not there (the tiers share include paths).
  const std::string missing =
      "cuda_sources:1:10: fatal error: my_helpers.cuh: No such file or directory\n"
      "compilation terminated.\n";
  EXPECT_TRUE(nvcc_lean(missing, "#include \"my_helpers.cuh\"\n").own_error);
}

// The split tier: syntax errors, redefinitions and members of built-in types decide (a missing
// name may be on the other side by the split's doing), and none on a line the split wrote its own
// text at.
TEST(CompileDiagnosticsTest, SplitTierDecidesOnSyntaxRedefinitionsAndBuiltinMembers) {
  const std::string source =
      "#include <torch/extension.h>\n\n"
      "__global__ void scale_kernel(const float* x, float* y, float s, int n) {\n"
      "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
      "    if (i < n) y[i] = x[i] * s\n"
      "}\n\n"
      "torch::Tensor scale_cuda(torch::Tensor x, double s) {\n"
      "    auto y = torch::empty_like(x);\n"
      "    int n = x.numel()\n"
      "    scale_kernel<<<(n + 255) / 256, 256>>>(x.data_ptr<float>(), y.data_ptr<float>(), "
      "(float)s, n);\n"
      "    return y;\n"
      "}\n";
  auto split = [&](const std::string& output, DiagnosticsCompiler compiler) {
    return read_compile_errors(output, cuda(source), DiagnosticsScope::kSplit, compiler);
  };
  // nvcc on the device unit.
  EXPECT_TRUE(split("cuda_sources(6): error: expected a \";\"\n  }\n  ^\n\n"
                    "1 error detected in the compilation of \"kernels.cu\".\n",
                    DiagnosticsCompiler::kNvcc)
                  .own_error);
  EXPECT_FALSE(split("cuda_sources(5): error: identifier \"scale_factor\" is undefined\n",
                     DiagnosticsCompiler::kNvcc)
                   .own_error);
  // g++ on the binding: the missing ";" is before the rewritten launch, so it is the
  // candidate's; an error inside the launch's line is not known to be.
  EXPECT_TRUE(split("cuda_sources: In function 'at::Tensor scale_cuda(at::Tensor, double)':\n"
                    "cuda_sources:11:5: error: expected ',' or ';' before "
                    "'dice_split_launch_scale_kernel'\n",
                    DiagnosticsCompiler::kHostCxx)
                  .own_error);
  EXPECT_FALSE(split("cuda_sources:11:40: error: expected primary-expression before ')' token\n",
                     DiagnosticsCompiler::kHostCxx)
                   .own_error);
  // A kernel's first line is where its stubs go.
  EXPECT_FALSE(
      split("cuda_sources(3): error: expected a \")\"\n", DiagnosticsCompiler::kNvcc).own_error);
  // Two RL-style answers (split_compile_bench on dev 6995 and 3139, nvcc on the device unit).
  const std::string int_int =
      "cuda_sources(41): error: invalid combination of type specifiers\n"
      "      int int = blockIdx.x.x;\n"
      "cuda_sources(41): error: expected an identifier\n"
      "      int int = blockIdx.x.x;\n"
      "cuda_sources(41): error: expression must have class type but it has type \"const unsigned "
      "int\"\n"
      "      int int = blockIdx.x.x;\n"
      "cuda_sources(42): error: identifier \"idx\" is undefined\n";
  std::string int_int_source(40, '\n');
  int_int_source += "    int int = blockIdx.x.x;\n    if (idx >= numel) return;\n";
  EXPECT_TRUE(read_compile_errors(int_int, cuda(int_int_source), DiagnosticsScope::kSplit,
                                  DiagnosticsCompiler::kNvcc)
                  .own_error);
  const std::string twice =
      "__device__ float dice_sq(float v) { return v * v; }\n"
      "__device__ float dice_sq(float v) { return v * v; }\n";
  const CompileErrorReading redefined = read_compile_errors(
      "cuda_sources(2): error: function \"dice_sq\" has already been defined (previous definition "
      "at line 1)\n  __attribute__((device)) float dice_sq(float v) { return v * v; }\n",
      cuda(twice), DiagnosticsScope::kSplit, DiagnosticsCompiler::kNvcc);
  EXPECT_TRUE(redefined.own_error);
  EXPECT_EQ(redefined.why, "own redefinition at cuda_sources:2");
  // What the headers scope decides on, the split does not.
  const std::string own_member = "struct P { int a; };\n__global__ void k(P p) { p.b = 1; }\n";
  EXPECT_FALSE(read_compile_errors("cuda_sources(2): error: class \"P\" has no member \"b\"\n",
                                   cuda(own_member), DiagnosticsScope::kSplit,
                                   DiagnosticsCompiler::kNvcc)
                   .own_error);
  EXPECT_TRUE(
      nvcc_lean("cuda_sources(2): error: class \"P\" has no member \"b\"\n", own_member).own_error);
}

// Own names: declared by the candidate (a use out of its scope) against names it never declares.
TEST(CompileDiagnosticsTest, OwnNamesAreTheDeclaredOnes) {
  const std::string source =
      "__device__ float twice(float v) { return 2 * v; }\n"
      "__global__ void k(float* x, int n) {\n"
      "  for (int j = 0; j < n; ++j) { float acc = x[j]; }\n"
      "  x[0] = acc + twice(x[1]) * scale;\n"
      "}\n";
  EXPECT_TRUE(
      nvcc_lean("cuda_sources(4): error: identifier \"acc\" is undefined\n", source).own_error);
  EXPECT_FALSE(
      nvcc_lean("cuda_sources(4): error: identifier \"scale\" is undefined\n", source).own_error);
  // `return x;` and `a * b` declare nothing.
  const std::string uses = "float f(float a) { return M_SQRT3 * a; }\nfloat g() { return zz; }\n";
  EXPECT_FALSE(
      nvcc_lean("cuda_sources(2): error: identifier \"zz\" is undefined\n", uses).own_error);
  // `using namespace torch;` names torch, it does not declare it.
  EXPECT_FALSE(gxx_slim("cpp_sources:2:1: error: 'torch' has not been declared\n",
                        "using namespace torch;\ntorch::Tensor f();\n")
                   .own_error);
}

// A number the lexer cannot read decides in either tier and with either compiler (an RL answer's
// `0..f`, nvcc on the device unit; g++'s wording for the same text).
TEST(CompileDiagnosticsTest, AMalformedNumberDecidesInEitherTier) {
  const std::string source =
      "__global__ void k(float* out, const float* in, int n) {\n"
      "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
      "  if (i < n) {\n"
      "    float v = in[i];\n"
      "    v = v > 0..f ? v : v * 0.05f;\n"
      "    out[i] = v;\n"
      "  }\n"
      "}\n";
  for (DiagnosticsScope scope : {DiagnosticsScope::kSplit, DiagnosticsScope::kHeaders}) {
    const CompileErrorReading nvcc = read_compile_errors(
        "cuda_sources(5): error: extra text after expected end of number\n"
        "      v = v > 0..f ? v : v * 0.05f;\n              ^\n",
        cuda(source), scope, DiagnosticsCompiler::kNvcc);
    EXPECT_TRUE(nvcc.own_error) << nvcc.why;
    EXPECT_NE(nvcc.why.find("malformed number at cuda_sources:5"), std::string::npos) << nvcc.why;
    EXPECT_TRUE(read_compile_errors("cuda_sources:5:13: error: too many decimal points in number\n",
                                    cuda(source), scope, DiagnosticsCompiler::kHostCxx)
                    .own_error);
  }
}

// An undeclared name that no header of the full tier spells (header_names.h) decides in either
// tier, as the RL answers' `vfloat`, `FINITY` or `tanv` (here `expm1ff`). A name some header
// spells, one the candidate declares where the split may have moved it, an #include of a header
// that was not read and a pasting macro keep the retry; so does a reading without the names.
TEST(CompileDiagnosticsTest, UnknownNamesDecideWhereNoHeaderSpellsThem) {
  testing_util::TempDir dir("dice-diagnostics-names");
  std::filesystem::create_directories(dir.sub("include/torch"));
  std::ofstream(dir.sub("include/torch/extension.h"))
      << "namespace at { class Tensor; inline int numel_of(int idx) { return idx; } }\n";
  std::ofstream(dir.sub("include/cuda_runtime.h")) << "int cudaGetLastError();\n";
  const HeaderNames names = HeaderNames::read({dir.sub("include")}, {});
  const std::string source =
      "#include <torch/extension.h>\n"
      "#include <cuda_runtime.h>\n"
      "float host_scale = 2.f;\n"
      "__global__ void k(float* y, int n) {\n"
      "  int i = threadIdx.x;\n"
      "  if (i < n) y[i] = expm1ff(y[i]) * host_scale + idx;\n"
      "}\n";
  auto read = [&](const std::string& name, DiagnosticsScope scope, const HeaderNames* with,
                  const std::string& text) {
    return read_compile_errors("cuda_sources(6): error: identifier \"" + name + "\" is undefined\n",
                               cuda(text), scope, DiagnosticsCompiler::kNvcc, with);
  };
  for (DiagnosticsScope scope : {DiagnosticsScope::kHeaders, DiagnosticsScope::kSplit}) {
    const CompileErrorReading unknown = read("expm1ff", scope, &names, source);
    EXPECT_TRUE(unknown.own_error) << unknown.why;
    EXPECT_NE(unknown.why.find("unknown name expm1ff"), std::string::npos) << unknown.why;
    EXPECT_FALSE(read("expm1ff", scope, nullptr, source).own_error);
    EXPECT_FALSE(read("idx", scope, &names, source).own_error);  // a header spells it
    EXPECT_FALSE(read("expm1ff", scope, &names, "#include <cuda_fp16.h>\n" + source).own_error);
    EXPECT_FALSE(read("expm1ff", scope, &names, "#define V(n) v##n\n" + source).own_error);
  }
  // Declared by the candidate: its own name in the headers tier (the text is unchanged there),
  // perhaps the split's doing in the split tier. So is a name spelled twice where the reader
  // sees no declaration (`float a = 1.f, scale2 = 2.f;` declares scale2 behind a comma).
  EXPECT_TRUE(read("host_scale", DiagnosticsScope::kHeaders, &names, source).own_error);
  EXPECT_FALSE(read("host_scale", DiagnosticsScope::kSplit, &names, source).own_error);
  const std::string twice = "float a = 1.f, scale2 = 2.f;\n" + source + "// scale2\n";
  const std::string used_twice =
      std::string(twice).replace(twice.find("host_scale + idx"), 16, "scale2 + idx");
  EXPECT_TRUE(read("scale2", DiagnosticsScope::kHeaders, &names, used_twice).own_error);
  EXPECT_FALSE(read("scale2", DiagnosticsScope::kSplit, &names, used_twice).own_error);
  // A comment's mention is no second spelling.
  EXPECT_TRUE(read("expm1ff", DiagnosticsScope::kSplit, &names, source + "// expm1ff\n").own_error);
  // g++'s spelling, in the binding file.
  const CompileErrorReading gxx = read_compile_errors(
      "cpp_sources:6:21: error: 'expm1ff' was not declared in this scope; did you mean 'expm1f'?\n",
      cpp(source), DiagnosticsScope::kSplit, DiagnosticsCompiler::kHostCxx, &names);
  EXPECT_TRUE(gxx.own_error) << gxx.why;
}

}  // namespace
}  // namespace dice
