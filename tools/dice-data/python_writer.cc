#include "tools/dice-data/python_writer.h"

namespace dice::data {
namespace {

const char kImports[] = "import torch\nimport torch.nn as nn\n";

std::string signature(const std::vector<std::string>& args, const CodeStyle& style) {
  std::string s = "    def forward(self";
  for (const auto& a : args) s += ", " + a + (style.annotations ? ": torch.Tensor" : "");
  return s + (style.annotations ? ") -> torch.Tensor:\n" : "):\n");
}

std::string init_signature(const std::vector<InitArg>& args) {
  std::string s = "    def __init__(self";
  for (const auto& a : args) s += ", " + a.name;
  return s + "):\n";
}

std::string super_call(const std::string& cls, const CodeStyle& style) {
  return style.short_super ? "        super().__init__()\n"
                           : "        super(" + cls + ", self).__init__()\n";
}

std::string lines(const std::vector<std::string>& body, const std::string& indent) {
  std::string s;
  for (const auto& l : body) s += indent + l + "\n";
  return s;
}

std::string quoted(const std::string& text, const CodeStyle& style) {
  const char* q = style.double_quotes ? "\"" : "'";
  return q + text + q;
}

}  // namespace

std::string fill(std::string text, const std::vector<std::pair<std::string, std::string>>& values) {
  for (const auto& [key, value] : values) {
    const std::string token = "{" + key + "}";
    for (std::size_t at = text.find(token); at != std::string::npos;
         at = text.find(token, at + value.size()))
      text.replace(at, token.size(), value);
  }
  return text;
}

std::string render_reference(const ReferenceSpec& ref, const CodeStyle& style) {
  std::string s = kImports;
  s += "\n\nclass Model(nn.Module):\n";
  if (style.docstring && !ref.doc.empty()) s += "    \"\"\"" + ref.doc + "\"\"\"\n\n";
  s += init_signature(ref.init_args);
  s += super_call("Model", style);
  s += lines(ref.init_body, "        ");
  s += "\n" + signature(ref.forward_args, style);
  s += lines(ref.forward_body, "        ");
  s += "\n\n";
  for (const auto& [name, value] : ref.sizes) s += name + " = " + std::to_string(value) + "\n";
  for (const auto& a : ref.init_args)
    if (!a.value.empty()) s += a.name + " = " + a.value + "\n";
  s += "\n\ndef get_inputs():\n";
  if (style.named_inputs) {
    std::string names;
    for (std::size_t i = 0; i < ref.inputs.size(); ++i) {
      s += "    " + ref.forward_args[i] + " = " + ref.inputs[i] + "\n";
      names += (i ? ", " : "") + ref.forward_args[i];
    }
    s += "    return [" + names + "]\n";
  } else {
    std::string list;
    for (std::size_t i = 0; i < ref.inputs.size(); ++i) list += (i ? ", " : "") + ref.inputs[i];
    s += "    return [" + list + "]\n";
  }
  s += "\n\ndef get_init_inputs():\n    return [";
  for (std::size_t i = 0; i < ref.init_args.size(); ++i)
    s += (i ? ", " : "") + ref.init_args[i].name;
  return s + "]\n";
}

std::string render_prefix(const CandidateSpec& cand, const CodeStyle& style) {
  std::string s = std::string(kImports) + "from torch.utils.cpp_extension import load_inline\n\n";
  if (style.prefix_comment && !cand.comment.empty()) return s + "# " + cand.comment + "\n";
  return s + "\n";
}

std::string render_middle(const CandidateSpec& cand, const CodeStyle& style) {
  return style.source_var + " = \"\"\"\n" + cand.cuda_source + "\"\"\"";
}

std::string render_suffix(const CandidateSpec& cand, const ReferenceSpec& ref,
                          const CodeStyle& style) {
  std::string s = "\n\n" + style.cpp_var + " = ";
  if (cand.declarations.size() == 1 && style.cpp_one_line) {
    s += "\"" + cand.declarations[0] + "\"\n";  // a one-line string, as some candidates have it
  } else {
    s += "\"\"\"\n" + lines(cand.declarations, "") + "\"\"\"\n";
  }
  s += "\n" + style.ext_var + " = load_inline(\n";
  s += "    name=" + quoted(style.module, style) + ",\n";
  s += "    cpp_sources=" + style.cpp_var + ",\n";
  s += "    cuda_sources=" + style.source_var + ",\n";
  s += "    functions=[";
  for (std::size_t i = 0; i < cand.functions.size(); ++i)
    s += (i ? ", " : "") + quoted(cand.functions[i], style);
  s += "],\n";
  if (style.verbose)
    s += std::string("    verbose=") + (style.verbose == 2 ? "True" : "False") + ",\n";
  s += ")\n\n\nclass ModelNew(nn.Module):\n";
  s += init_signature(ref.init_args);
  s += super_call("ModelNew", style);
  s += lines(cand.init_body, "        ");
  s += "\n" + signature(ref.forward_args, style);
  s += lines(cand.forward_body, "        ");
  return s;
}

}  // namespace dice::data
