// One generated PyTorch -> CUDA pair: the reference, the candidate split as DICE splits it
// (prefix: imports; middle: the CUDA source string; suffix: declarations, load_inline, ModelNew),
// the task's other shapes, and the held-out keys it touches (heldout.h).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace dice::data {

// {"batch_size": 3, "dim": 129}: module-level integers of the reference that only get_inputs
// reads (common/task/shape_variants.h), in the order they are written.
using SizeVariant = std::vector<std::pair<std::string, std::int64_t>>;

struct KernelPair {
  std::string id;      // "<family>-<level>-<n>", unique over the curriculum (set by curriculum.cc)
  std::string family;  // "unary", "binary", "chain" (level 2), "reduce", "norm" (level 3)
  std::string level;   // "1", "2", "3"
  std::string op;      // finer label for counts: "leaky_relu", "add[row]", "scale>relu", "softmax"
  std::string dtype;   // "float32", "float16", "bfloat16"
  std::vector<std::string> keys;  // every held-out key this pair touches
  // What the task asks for, without its surface: the op with its parameter values ("relu",
  // "leaky_relu(negative_slope=0.2)"), the binary op with its broadcast ("add[row]"), the chain's
  // combination ("sub>scale>relu"; its constants vary), the reduction with keepdim
  // ("max/keepdim=True"), the normalisation with its dtype ("softmax/float16"). Tasks of one key
  // are one cluster to learning-report's bootstrap; the in-distribution held-out tasks are fresh
  // instances of the RL tasks' keys.
  std::string op_key;
  std::string pytorch_code;
  std::string prefix, middle, suffix;
  std::vector<SizeVariant> shape_variants;

  std::string cuda_code() const { return prefix + middle + suffix; }
};

}  // namespace dice::data
