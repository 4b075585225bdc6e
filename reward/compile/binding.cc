#include "reward/compile/binding.h"

#include <filesystem>
#include <regex>

namespace dice {
namespace {

// Blanks every #include of torch/extension.h (the slim prelude already provides what kernels use
// of it), keeping line numbers so compiler errors still point at the candidate's lines.
std::string without_extension_include(const std::string& source) {
  static const std::regex kExtensionInclude(
      R"((^|\n)[ \t]*#[ \t]*include[ \t]*[<"]torch/extension\.h[>"][^\n]*)");
  return std::regex_replace(source, kExtensionInclude, "$1");
}

// What kernels use of the torch:: namespace without <torch/types.h> (which pulls in all of
// ATen): at:: under its torch:: name, and torch/types.h's dtype names (torch::kInt32, ...) when
// the source uses them and does not include a torch/ header that defines them itself.
std::string torch_namespace(const std::string& source_without_extension_include) {
  const std::string& src = source_without_extension_include;
  std::string out = "namespace torch {\nusing namespace at;\n";
  if (src.find("torch::k") != std::string::npos && src.find("<torch/") == std::string::npos &&
      src.find("\"torch/") == std::string::npos) {
    out +=
        "constexpr auto kUInt8 = at::kByte;\nconstexpr auto kInt8 = at::kChar;\n"
        "constexpr auto kInt16 = at::kShort;\nconstexpr auto kInt32 = at::kInt;\n"
        "constexpr auto kInt64 = at::kLong;\nconstexpr auto kFloat16 = at::kHalf;\n"
        "constexpr auto kFloat32 = at::kFloat;\nconstexpr auto kFloat64 = at::kDouble;\n";
  }
  return out + "}\n";
}

// kLean's includes for `source` (without its torch/extension.h includes): what a kernel file uses
// of torch, picked by name.
std::string lean_prelude(const std::string& source, const std::set<std::string>& operators) {
  std::string out = "#include <ATen/core/Tensor.h>\n#include <ATen/Dispatch.h>\n";
  // Function calls spelled at::name( or torch::name( (also at::cuda:: and similar, skipped when
  // no per-operator header has the name).
  static const std::regex kCall(R"(\b(?:at|torch)\s*::\s*([A-Za-z_][A-Za-z0-9_]*)\s*\()");
  std::set<std::string> used;
  for (std::sregex_iterator it(source.begin(), source.end(), kCall), end; it != end; ++it) {
    const std::string name = (*it)[1].str();
    if (operators.count(name) != 0) used.insert(name);
  }
  for (const auto& name : used) out += "#include <ATen/ops/" + name + ".h>\n";
  if (source.find("at::cuda") != std::string::npos ||
      source.find("getCurrentCUDAStream") != std::string::npos) {
    out += "#include <ATen/cuda/CUDAContext.h>\n";
  }
  if (source.find("CUDAGuard") != std::string::npos) out += "#include <c10/cuda/CUDAGuard.h>\n";
  return out + torch_namespace(source);
}

}  // namespace

std::set<std::string> per_operator_headers(const std::vector<std::string>& include_dirs) {
  namespace fs = std::filesystem;
  std::set<std::string> names;
  for (const auto& dir : include_dirs) {
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(fs::path(dir) / "ATen" / "ops", ec)) {
      const std::string file = entry.path().filename().string();
      if (file.size() > 2 && file.compare(file.size() - 2, 2, ".h") == 0) {
        names.insert(file.substr(0, file.size() - 2));
      }
    }
  }
  return names;
}

std::string cuda_translation_unit(const ExtensionSources& ext, TorchHeaders headers,
                                  const std::set<std::string>& operators) {
  // Candidates are written against load_inline, which makes these headers available without an
  // #include of their own.
  const bool slim = headers != TorchHeaders::kFull;
  const std::string body = slim ? without_extension_include(ext.cuda_sources) : ext.cuda_sources;
  std::string out = headers == TorchHeaders::kLean ? lean_prelude(body, operators)
                    : slim ? "#include <ATen/ATen.h>\n" + torch_namespace(body)
                           : "#include <torch/types.h>\n";
  out +=
      "#include <cuda.h>\n"
      "#include <cuda_runtime.h>\n"
      "#line 1 \"cuda_sources\"\n";
  out += body;
  out += "\n";
  return out;
}

std::string binding_prelude(TorchHeaders headers) {
  if (headers == TorchHeaders::kAten) {
    // torch/types.h's own namespace block, so host code written against it finds the same names
    // (at::'s operators, dtype names, optional); its factories' at:: counterparts differ only in
    // requires_grad, which aten_binding_applies() keeps away.
    return "#include <ATen/ATen.h>\n#include <torch/csrc/utils/pybind.h>\n"
           "#include <pybind11/stl.h>\n"
           "namespace torch {\nusing namespace at;\nusing c10::nullopt;\nusing c10::optional;\n"
           "using Dtype = at::ScalarType;\n"
           "constexpr auto kUInt8 = at::kByte;\nconstexpr auto kInt8 = at::kChar;\n"
           "constexpr auto kInt16 = at::kShort;\nconstexpr auto kInt32 = at::kInt;\n"
           "constexpr auto kInt64 = at::kLong;\nconstexpr auto kFloat16 = at::kHalf;\n"
           "constexpr auto kFloat32 = at::kFloat;\nconstexpr auto kFloat64 = at::kDouble;\n"
           "constexpr auto kU8 = kUInt8;\nconstexpr auto kI8 = kInt8;\n"
           "constexpr auto kI16 = kInt16;\nconstexpr auto kI32 = kInt32;\n"
           "constexpr auto kI64 = kInt64;\nconstexpr auto kF16 = kFloat16;\n"
           "constexpr auto kF32 = kFloat32;\nconstexpr auto kF64 = kFloat64;\n}\n";
  }
  // kLean is for the .cu only: its binding file is kSlim's.
  return headers != TorchHeaders::kFull
             ? "#include <torch/types.h>\n#include <torch/csrc/utils/pybind.h>\n"
               "#include <pybind11/stl.h>\n"
             : "#include <torch/extension.h>\n";
}

bool aten_binding_applies(const std::string& cpp_sources, const std::string& host_part) {
  const std::string text = without_extension_include(cpp_sources) + "\n" + host_part;
  static const std::regex kTorchInclude(R"(#[ \t]*include[ \t]*[<"]torch/)");
  static const std::regex kTorchTensor(R"(\btorch\s*::\s*tensor\s*[({])");
  return !std::regex_search(text, kTorchInclude) && !std::regex_search(text, kTorchTensor) &&
         text.find("requires_grad") == std::string::npos;
}

std::string binding_translation_unit(const ExtensionSources& ext, TorchHeaders headers,
                                     const std::string& prelude_header,
                                     const std::string& host_part) {
  const bool slim = headers != TorchHeaders::kFull;
  std::string out =
      prelude_header.empty() ? binding_prelude(headers) : "#include \"" + prelude_header + "\"\n";
  out += "#line 1 \"cpp_sources\"\n";
  out += slim ? without_extension_include(ext.cpp_sources) : ext.cpp_sources;
  out += "\n";
  out += host_part;
  if (ext.functions.empty()) return out;
  out += "\nPYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {\n";
  for (const auto& f : ext.functions) {
    out += "  m.def(\"" + f + "\", &" + f + ", \"" + f + "\");\n";
  }
  out += "}\n";
  return out;
}

}  // namespace dice
