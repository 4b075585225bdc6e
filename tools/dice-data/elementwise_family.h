// Levels 1 and 2: element-wise kernels. A task is an optional broadcasting binary op
// (x (B, N) op y) followed by unary ops, one kernel applying the whole chain per element:
//   family "unary":  one unary op (level 1), some with scalar parameters from get_init_inputs
//   family "binary": one binary op with y (N,), (B, 1) or (B, N) (level 1)
//   family "chain":  2-4 ops, optionally headed by a binary op (level 2)
#pragma once

#include <string>
#include <vector>

#include "tools/dice-data/code_style.h"
#include "tools/dice-data/dtype.h"
#include "tools/dice-data/kernel_pair.h"
#include "tools/dice-data/op_table.h"
#include "tools/dice-data/prng.h"

namespace dice::data {

struct ElementStep {
  const UnaryOp* op = nullptr;
  int value_index = 0;    // into op->values (ignored for ops without parameters)
  bool init_arg = false;  // the parameters are constructor arguments, else literals in the code
};

struct ElementwiseTask {
  std::string family;  // "unary", "binary", "chain"
  std::string level;   // "1" or "2"
  Dtype dtype = Dtype::kFloat32;
  const BinaryOp* binary = nullptr;  // the head of the chain, if any
  Broadcast broadcast = Broadcast::kFull;
  std::vector<ElementStep> steps;
};

// "sub>scale>relu": the op combination of a chain (its level-2 held-out key).
std::string chain_key(const ElementwiseTask& task);

// The pair for `task`; sizes, names and code style are drawn from `rng`. Its keys are every
// held-out key the task touches (param_key, binary_key, chain_key).
KernelPair render_elementwise(const ElementwiseTask& task, Prng& rng, SurfaceVariety surface = {});

}  // namespace dice::data
