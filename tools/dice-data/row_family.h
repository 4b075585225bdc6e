// Level 3: one block per row of the last dimension, a shared-memory tree reduction, loops that
// cover rows of any length.
//   family "reduce": sum, mean, max, min along the last dimension, keepdim on or off
//   family "norm":   softmax, log_softmax, layer norm (nn.LayerNorm(dim) weights as the module's
//                    parameters) and RMS norm over the last dimension
#pragma once

#include <string>

#include "tools/dice-data/code_style.h"
#include "tools/dice-data/dtype.h"
#include "tools/dice-data/kernel_pair.h"
#include "tools/dice-data/prng.h"

namespace dice::data {

enum class RowOp { kSum, kMean, kMax, kMin, kSoftmax, kLogSoftmax, kLayerNorm, kRmsNorm };
constexpr RowOp kReductions[] = {RowOp::kSum, RowOp::kMean, RowOp::kMax, RowOp::kMin};
constexpr RowOp kNorms[] = {RowOp::kSoftmax, RowOp::kLogSoftmax, RowOp::kLayerNorm,
                            RowOp::kRmsNorm};

const char* row_op_name(RowOp op);  // "sum", ..., "layer_norm", "rms_norm"
bool is_reduction(RowOp op);        // sum, mean, max, min

struct RowTask {
  RowOp op = RowOp::kSum;
  bool keepdim = false;  // reductions only
  Dtype dtype = Dtype::kFloat32;
};

// Held-out keys: "max/keepdim=True" (reductions), "softmax/float16" (normalisations).
std::string reduce_key(RowOp op, bool keepdim);
std::string norm_key(RowOp op, Dtype dtype);

// The pair for `task`, sizes, names and style drawn from `rng`.
KernelPair render_row(const RowTask& task, Prng& rng, SurfaceVariety surface = {});

}  // namespace dice::data
