#include "reward/binding.h"

namespace dice {

std::string cuda_translation_unit(const ExtensionSources& ext) {
  // Candidates are written against load_inline, which makes these headers available without an
  // #include of their own.
  std::string out =
      "#include <torch/types.h>\n"
      "#include <cuda.h>\n"
      "#include <cuda_runtime.h>\n"
      "#line 1 \"cuda_sources\"\n";
  out += ext.cuda_sources;
  out += "\n";
  return out;
}

std::string binding_translation_unit(const ExtensionSources& ext) {
  std::string out = "#include <torch/extension.h>\n#line 1 \"cpp_sources\"\n";
  out += ext.cpp_sources;
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
