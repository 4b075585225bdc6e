// The surface choices of one generated pair: names (the source string's variable, kernels, host
// functions, the load_inline module, arguments) and layout (threads per block, loop shape,
// allocation, comments...). They are drawn per pair so that no fixed string of the corpus can be
// memorised in place of the computation it stands for.
#pragma once

#include <string>

#include "tools/dice-data/prng.h"

namespace dice::data {

struct CodeStyle {
  // CUDA source
  int threads = 256;             // threads per block: 128, 256 or 512 (a power of two: the
                                 // tree reductions halve it)
  bool grid_stride = false;      // element-wise: a grid-stride loop, else one element per thread
  bool early_return = false;     // one element per thread: "if (i >= n) return;" vs "if (i < n)"
  bool size_product = false;     // n = x.size(0) * x.size(1) instead of x.numel()
  bool restrict_ptrs = false;    // __restrict__ on kernel pointers
  bool comments = false;         // explanatory comments in the CUDA source
  bool empty_like = true;        // torch::empty_like(x), else torch::empty(x.sizes(), x.options())
  bool device_helper = false;    // ops (or reductions) as __device__ functions
  bool extern_shared = false;    // rows: extern __shared__ sized at launch, else a fixed array
  bool runtime_include = false;  // #include <cuda_runtime.h> besides torch/extension.h
  bool static_cast_scalars = true;  // static_cast<float>(p), else (float)p
  bool const_threads = true;        // "const int threads = 256;" vs "int threads = 256;"
  bool cap_grid = false;            // grid-stride loops: at most 1024 blocks
  // Python
  bool statements = false;      // forward as one assignment per op, else one expression
  bool annotations = false;     // forward(self, x: torch.Tensor) -> torch.Tensor
  bool short_super = true;      // super().__init__(), else super(Model, self).__init__()
  bool docstring = false;       // a one-line docstring on Model
  bool prefix_comment = false;  // a comment line closing the candidate's prefix
  bool named_inputs = false;    // get_inputs assigns x = ... before returning [x]
  bool double_quotes = true;    // quotes of load_inline's name and functions
  bool cpp_one_line = false;    // cpp_sources as "..." instead of """...""" (one declaration)
  int verbose = 0;              // load_inline(verbose=...): 0 left out, 1 False, 2 True
  // Names in the candidate file
  std::string source_var, cpp_var, kernel, host, module, ext_var;
  // Names inside the kernel: pointers, element count, index; for row kernels the row, thread,
  // shared buffer, row length and column
  std::string k_in, k_in2, k_out, k_n, k_idx, k_row, k_tid, k_buf, k_cols, k_col;
  // Names inside the host function
  std::string h_in, h_in2, h_out, h_n, h_blocks, h_threads, h_rows, h_cols;
};

// How a pair's names are chosen. varied: drawn from pools per pair (the default: no name is a
// string to memorise). fixed: each the first of its pool, derived from the label alone (the
// kernel is always <label>_kernel, the source string cuda_source); the layout still varies, and
// the draws are the same, so a seed gives the same tasks, shapes and layouts either way. A small
// model that cannot yet copy a name from its definition to its uses learns fixed names first.
enum class NameVariety { kVaried, kFixed };

// A style for a pair whose names derive from `label` ("leaky_relu", "scale_relu", "row_sum").
CodeStyle draw_style(Prng& rng, const std::string& label, NameVariety names = NameVariety::kVaried);

}  // namespace dice::data
