#include "reward/compile/binding.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "common/remove_tree.h"

namespace dice {
namespace {

ExtensionSources two_functions() {
  ExtensionSources ext;
  ext.name = "fused_ops";
  ext.cpp_sources =
      "torch::Tensor a_cuda(torch::Tensor x);\ntorch::Tensor b_cuda(torch::Tensor x);";
  ext.cuda_sources = "__global__ void k() {}\n";
  ext.functions = {"a_cuda", "b_cuda"};
  return ext;
}

TEST(BindingTest, ExportsEachFunctionUnderItsName) {
  std::string tu = binding_translation_unit(two_functions());
  EXPECT_EQ(tu.find("#include <torch/extension.h>"), 0u);
  size_t decl = tu.find("torch::Tensor a_cuda(torch::Tensor x);");
  size_t module = tu.find("PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {");
  ASSERT_NE(decl, std::string::npos);
  ASSERT_NE(module, std::string::npos);
  EXPECT_LT(decl, module);  // declarations come before their use
  EXPECT_NE(tu.find("m.def(\"a_cuda\", &a_cuda, \"a_cuda\");"), std::string::npos);
  EXPECT_NE(tu.find("m.def(\"b_cuda\", &b_cuda, \"b_cuda\");"), std::string::npos);
}

TEST(BindingTest, NoFunctionsMeansTheSourcesBindThemselves) {
  ExtensionSources ext = two_functions();
  ext.functions.clear();
  ext.cpp_sources += "\nPYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {}";
  std::string tu = binding_translation_unit(ext);
  EXPECT_EQ(tu.find("m.def("), std::string::npos);
  size_t first = tu.find("PYBIND11_MODULE");
  EXPECT_EQ(tu.find("PYBIND11_MODULE", first + 1), std::string::npos);
}

TEST(BindingTest, CudaUnitKeepsSourceAfterImplicitIncludes) {
  std::string tu = cuda_translation_unit(two_functions());
  size_t include = tu.find("#include <cuda_runtime.h>");
  size_t line = tu.find("#line 1 \"cuda_sources\"");
  size_t kernel = tu.find("__global__ void k() {}");
  ASSERT_NE(include, std::string::npos);
  ASSERT_NE(line, std::string::npos);
  ASSERT_NE(kernel, std::string::npos);
  EXPECT_LT(include, line);
  EXPECT_LT(line, kernel);
}

TEST(BindingTest, SlimUnitsDropTheExtensionIncludeAndKeepLineNumbers) {
  ExtensionSources ext = two_functions();
  ext.cuda_sources =
      "#include <torch/extension.h>\n  # include \"torch/extension.h\"\n__global__ void k() {}\n";
  ext.cpp_sources = "#include <torch/extension.h>\n" + ext.cpp_sources;
  const std::string cu = cuda_translation_unit(ext, TorchHeaders::kSlim);
  EXPECT_EQ(cu.find("torch/extension.h"), std::string::npos);
  EXPECT_EQ(cu.find("#include <ATen/ATen.h>"), 0u);
  EXPECT_NE(cu.find("using namespace at;"), std::string::npos);
  // The kernel stays on line 3 of cuda_sources, as the candidate wrote it.
  const size_t line = cu.find("#line 1 \"cuda_sources\"\n");
  ASSERT_NE(line, std::string::npos);
  EXPECT_EQ(cu.substr(line + 23), "\n\n__global__ void k() {}\n\n");
  const std::string binding = binding_translation_unit(ext, TorchHeaders::kSlim);
  EXPECT_EQ(binding.find("torch/extension.h"), std::string::npos);
  EXPECT_NE(binding.find("#include <torch/csrc/utils/pybind.h>"), std::string::npos);
  EXPECT_NE(binding.find("m.def(\"a_cuda\""), std::string::npos);
  // The full variant is what load_inline compiles.
  EXPECT_NE(cuda_translation_unit(ext, TorchHeaders::kFull).find("torch/extension.h"),
            std::string::npos);
}

TEST(BindingTest, LeanUnitIncludesTheOperatorsTheSourceCalls) {
  ExtensionSources ext = two_functions();
  ext.cuda_sources =
      "#include <torch/extension.h>\n__global__ void k(float* y) {}\n"
      "torch::Tensor f(torch::Tensor x) {\n"
      "  auto y = torch::empty_like(x);\n"
      "  auto z = at::zeros ({4}, x.options());\n"
      "  auto s = at::cuda::getCurrentCUDAStream();\n"
      "  return torch::not_an_operator(y);\n}\n";
  const std::set<std::string> operators = {"empty_like", "zeros", "ones"};
  const std::string cu = cuda_translation_unit(ext, TorchHeaders::kLean, operators);
  EXPECT_EQ(cu.rfind("#include <ATen/core/Tensor.h>\n", 0), 0u) << cu;
  EXPECT_NE(cu.find("#include <ATen/Dispatch.h>"), std::string::npos);
  EXPECT_NE(cu.find("#include <ATen/ops/empty_like.h>"), std::string::npos);
  EXPECT_NE(cu.find("#include <ATen/ops/zeros.h>"), std::string::npos);
  // Only what the source calls, and only names that have a header.
  EXPECT_EQ(cu.find("ops/ones.h"), std::string::npos);
  EXPECT_EQ(cu.find("not_an_operator.h"), std::string::npos);
  EXPECT_NE(cu.find("#include <ATen/cuda/CUDAContext.h>"), std::string::npos);
  EXPECT_EQ(cu.find("<ATen/ATen.h>"), std::string::npos);
  EXPECT_EQ(cu.find("torch/extension.h"), std::string::npos);
  EXPECT_NE(cu.find("using namespace at;"), std::string::npos);
  // torch/types.h's dtype names, unless the source includes a torch/ header of its own.
  ext.cuda_sources += "auto t = torch::kFloat32;\n";
  EXPECT_NE(cuda_translation_unit(ext, TorchHeaders::kLean, operators)
                .find("constexpr auto kFloat32 = at::kFloat;"),
            std::string::npos);
  ext.cuda_sources = "#include <torch/types.h>\n" + ext.cuda_sources;
  EXPECT_EQ(cuda_translation_unit(ext, TorchHeaders::kLean, operators).find("constexpr auto k"),
            std::string::npos);
  // The binding file has no lean form: it is the slim one.
  EXPECT_EQ(binding_translation_unit(ext, TorchHeaders::kLean),
            binding_translation_unit(ext, TorchHeaders::kSlim));
}

TEST(BindingTest, PerOperatorHeadersAreReadFromTheIncludeDirs) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("dice-ops-" + std::to_string(::getpid()));
  fs::create_directories(dir / "ATen" / "ops");
  for (const char* f : {"empty.h", "zeros_like.h", "README.txt"}) {
    std::ofstream(dir / "ATen" / "ops" / f) << "\n";
  }
  EXPECT_EQ(per_operator_headers({dir.string(), "/nonexistent"}),
            (std::set<std::string>{"empty", "zeros_like"}));
  EXPECT_TRUE(remove_tree(dir).ok());
}

// kAten's binding: ATen and torch's pybind11 casters instead of torch/types.h, with the names
// torch/types.h adds to torch:: spelled out; the extension include still dropped.
TEST(BindingTest, AtenBindingHasAtenAndTorchTypesNamesWithoutTorchTypes) {
  ExtensionSources ext = two_functions();
  ext.cpp_sources = "#include <torch/extension.h>\n" + ext.cpp_sources;
  const std::string host = "torch::Tensor a_cuda(torch::Tensor x) { return x; }\n";
  const std::string binding = binding_translation_unit(ext, TorchHeaders::kAten, "", host);
  EXPECT_EQ(binding.rfind(binding_prelude(TorchHeaders::kAten) + "#line 1 \"cpp_sources\"", 0), 0u)
      << binding;
  EXPECT_NE(binding.find("#include <ATen/ATen.h>"), std::string::npos);
  EXPECT_NE(binding.find("#include <torch/csrc/utils/pybind.h>"), std::string::npos);
  EXPECT_EQ(binding.find("torch/types.h"), std::string::npos);
  EXPECT_EQ(binding.find("torch/extension.h"), std::string::npos);
  for (const char* name : {"using namespace at;", "kFloat32 = at::kFloat", "kI64 = kInt64",
                           "using Dtype = at::ScalarType;", "using c10::optional;"}) {
    EXPECT_NE(binding.find(name), std::string::npos) << name;
  }
  EXPECT_LT(binding.find("#line 1 \"cpp_sources\""), binding.find(host));
  EXPECT_LT(binding.find(host), binding.find("m.def(\"a_cuda\""));
  // Not the slim prelude: a precompiled header of one is not taken for the other.
  EXPECT_NE(binding_prelude(TorchHeaders::kAten), binding_prelude(TorchHeaders::kSlim));
}

TEST(BindingTest, AtenBindingAppliesUnlessTorchOnlyMeaningIsUsed) {
  const std::string decl = "#include <torch/extension.h>\ntorch::Tensor f(torch::Tensor x);\n";
  const std::string typical =
      "torch::Tensor f(torch::Tensor x) {\n  TORCH_CHECK(x.is_cuda(), \"cuda\");\n"
      "  auto y = torch::empty_like(x);\n"
      "  auto z = torch::zeros({1}, x.options().dtype(torch::kInt32));\n  return y;\n}\n";
  EXPECT_TRUE(aten_binding_applies(decl, typical));
  EXPECT_TRUE(aten_binding_applies("", "auto t = x.tensor_data(); int tensor_count = 0;"));
  // torch::tensor takes the default dtype, at::tensor the values' own.
  EXPECT_FALSE(aten_binding_applies(decl, "auto t = torch::tensor({1.0, 2.0});"));
  EXPECT_FALSE(aten_binding_applies(decl, "auto t = torch :: tensor (v, x.options());"));
  // at::'s factories reject requires_grad; torch::'s honour it.
  EXPECT_FALSE(
      aten_binding_applies(decl, "auto y = torch::zeros({1}, x.options().requires_grad(true));"));
  // Another torch/ header of its own would define torch::'s names a second time.
  EXPECT_FALSE(aten_binding_applies("#include <torch/torch.h>\n", typical));
  EXPECT_FALSE(aten_binding_applies("", "#include \"torch/types.h\"\n" + typical));
}

TEST(BindingTest, PrecompiledPreludeReplacesTheHeaderLines) {
  ExtensionSources ext = two_functions();
  const std::string binding =
      binding_translation_unit(ext, TorchHeaders::kSlim, "/cache/pch-1/binding_prelude.h");
  EXPECT_EQ(
      binding.rfind("#include \"/cache/pch-1/binding_prelude.h\"\n#line 1 \"cpp_sources\"\n", 0),
      0u)
      << binding;
  EXPECT_EQ(binding.find("pybind.h"), std::string::npos);
  EXPECT_NE(binding.find("m.def(\"a_cuda\""), std::string::npos);
  // Without one, the prelude is spelled out: the same text a precompiled header is built from.
  EXPECT_EQ(binding_translation_unit(ext, TorchHeaders::kSlim)
                .rfind(binding_prelude(TorchHeaders::kSlim) + "#line 1", 0),
            0u);
}

}  // namespace
}  // namespace dice
