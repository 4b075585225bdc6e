#include "reward/binding.h"

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

}  // namespace

std::string cuda_translation_unit(const ExtensionSources& ext, TorchHeaders headers) {
  // Candidates are written against load_inline, which makes these headers available without an
  // #include of their own.
  const bool slim = headers == TorchHeaders::kSlim;
  std::string out = slim ? "#include <ATen/ATen.h>\nnamespace torch {\nusing namespace at;\n}\n"
                         : "#include <torch/types.h>\n";
  out +=
      "#include <cuda.h>\n"
      "#include <cuda_runtime.h>\n"
      "#line 1 \"cuda_sources\"\n";
  out += slim ? without_extension_include(ext.cuda_sources) : ext.cuda_sources;
  out += "\n";
  return out;
}

std::string binding_prelude(TorchHeaders headers) {
  return headers == TorchHeaders::kSlim
             ? "#include <torch/types.h>\n#include <torch/csrc/utils/pybind.h>\n"
               "#include <pybind11/stl.h>\n"
             : "#include <torch/extension.h>\n";
}

std::string binding_translation_unit(const ExtensionSources& ext, TorchHeaders headers,
                                     const std::string& prelude_header) {
  const bool slim = headers == TorchHeaders::kSlim;
  std::string out =
      prelude_header.empty() ? binding_prelude(headers) : "#include \"" + prelude_header + "\"\n";
  out += "#line 1 \"cpp_sources\"\n";
  out += slim ? without_extension_include(ext.cpp_sources) : ext.cpp_sources;
  out += "\n";
  if (ext.functions.empty()) return out;
  out += "\nPYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {\n";
  for (const auto& f : ext.functions) {
    out += "  m.def(\"" + f + "\", &" + f + ", \"" + f + "\");\n";
  }
  out += "}\n";
  return out;
}

}  // namespace dice
