// Comparing dice's Qwen3 model with reference logits from Hugging Face transformers, as written
// by make_reference.py (see its docstring for the file layout). Used by dice_model_compare on the
// GPU node and by tests/model/hf_fixture_test.cc on CI's CPU.
#pragma once

#include <ATen/core/Tensor.h>

#include <map>
#include <string>
#include <vector>

#include "common/status.h"
#include "model/qwen3.h"

namespace dice {

struct ReferenceLogits {
  at::Tensor input_ids;                      // [B, L] int64
  at::Tensor logit_columns;                  // [C] int64: vocabulary columns kept
  std::map<std::string, at::Tensor> logits;  // "causal.float32" -> [B, L, C] float32, ...
  std::map<std::string, std::string> metadata;
  // The dtypes ("float32", "bfloat16") that have both causal and block_causal logits.
  std::vector<std::string> dtypes() const;
};

// Reads DIR/reference.safetensors into CPU tensors.
Result<ReferenceLogits> read_reference_logits(const std::string& path);

// One row of the comparison table.
struct LogitsComparison {
  std::string check;  // "block_causal vs transformers 4-D mask", ...
  std::string dtype;  // the model's dtype
  double max_abs_diff = 0;
  double max_abs_ref = 0;
  double tolerance = 0;  // on max_abs_diff / max(1, max_abs_ref)
  bool passed() const;
};

// Tolerance on max|diff| / max(1, max|ref|): 1e-4 for float32, 3e-2 for bfloat16/float16 (two
// implementations rounding in different orders; a wrong mask or RoPE gives O(1)).
double logits_tolerance(const std::string& dtype);

// Logits of `ids` [B, L] from cached decoding: row b prefills (b % 4 + 1) whole blocks (fewer if
// the row is short), then decodes the rest one block per forward in lock-step with the other
// rows, storing each block. The result is [B, L, vocab] float32, comparable to block-causal.
at::Tensor cached_decode_logits(Qwen3LMImpl& lm, const at::Tensor& ids);

// For a model already in `dtype` on its device: block-causal and causal logits against the
// reference's `dtype` entries, and cached decoding against the model's own block-causal logits.
std::vector<LogitsComparison> compare_with_reference(Qwen3LMImpl& lm,
                                                     const ReferenceLogits& reference,
                                                     const std::string& dtype);

// A fixed-width table, one line per comparison, with PASS/FAIL.
std::string format_comparisons(const std::vector<LogitsComparison>& rows);

}  // namespace dice
