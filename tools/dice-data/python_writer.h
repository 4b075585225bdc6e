// The Python around the kernels: the KernelBench reference file (class Model, module-level sizes,
// get_inputs, get_init_inputs) and the candidate's prefix, middle (the CUDA source string) and
// suffix (declarations, load_inline, class ModelNew), as the families describe them.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "tools/dice-data/code_style.h"

namespace dice::data {

// A constructor argument of Model and ModelNew. `value` is its module-level assignment
// ("0.05"); empty for an argument that is one of the sizes (nn.LayerNorm's dim).
struct InitArg {
  std::string name;
  std::string value;
};

struct ReferenceSpec {
  std::string doc;                        // Model's docstring (used when style.docstring)
  std::vector<InitArg> init_args;         // what get_init_inputs() returns, in order
  std::vector<std::string> init_body;     // __init__ lines after super().__init__()
  std::vector<std::string> forward_args;  // "x", "y"
  std::vector<std::string> forward_body;  // forward's lines, the last one a return
  std::vector<std::pair<std::string, std::int64_t>> sizes;  // module-level integers, in order
  std::vector<std::string> inputs;  // get_inputs' tensor expressions, one per argument
};

struct CandidateSpec {
  std::string comment;                    // the prefix's closing comment (style.prefix_comment)
  std::string cuda_source;                // the CUDA source string's text, ending in a newline
  std::vector<std::string> declarations;  // cpp_sources lines: "torch::Tensor f(torch::Tensor x);"
  std::vector<std::string> functions;     // names load_inline exports
  std::vector<std::string> init_body;     // ModelNew.__init__ lines after super().__init__()
  std::vector<std::string> forward_body;  // ModelNew.forward's lines, the last one a return
};

std::string render_reference(const ReferenceSpec& ref, const CodeStyle& style);
std::string render_prefix(const CandidateSpec& cand, const CodeStyle& style);
std::string render_middle(const CandidateSpec& cand, const CodeStyle& style);
std::string render_suffix(const CandidateSpec& cand, const ReferenceSpec& ref,
                          const CodeStyle& style);

// "{x}"-style placeholder substitution: every "{key}" in `text` replaced by its value.
std::string fill(std::string text, const std::vector<std::pair<std::string, std::string>>& values);

}  // namespace dice::data
