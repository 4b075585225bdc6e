// The surface choices of one generated pair: names (the source string's variable, kernels, host
// functions, the load_inline module, arguments) and layout (threads per block, loop shape,
// allocation, comments...). They are drawn per pair so that no fixed string of the corpus can be
// memorised in place of the computation it stands for.
#pragma once

#include <string>
#include <vector>

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
  // Every layout choice above at its default, and the families' own surface choices (helper and
  // loop-variable names, an op's CUDA spelling) the first of their pools: surface_pick()
  bool fixed_layout = false;
  // Names in the candidate file
  std::string source_var, cpp_var, kernel, host, module, ext_var;
  // Names inside the kernel: pointers, element count, index; for row kernels the row, thread,
  // shared buffer, row length and column
  std::string k_in, k_in2, k_out, k_n, k_idx, k_row, k_tid, k_buf, k_cols, k_col;
  // Names inside the host function
  std::string h_in, h_in2, h_out, h_n, h_blocks, h_threads, h_rows, h_cols;
};

// How a pair's surface is chosen: drawn per pair (varied, the default: no surface is a string to
// memorise), or fixed. The draws are the same either way, so a seed gives the same tasks, shapes
// and parameters whatever the variety.
enum class Variety { kVaried, kFixed };

struct SurfaceVariety {
  // fixed: each name the first of its pool, derived from the label alone (the kernel is always
  // <label>_kernel, the source string cuda_source). A small model that cannot yet copy a name
  // from its definition to its uses learns fixed names first.
  Variety names = Variety::kVaried;
  // fixed: one layout (CodeStyle's defaults, CodeStyle::fixed_layout). A small model decoding
  // several positions of a block at once mixes layouts where the corpus offers several (on the
  // H200, 2026-12-02: `name namemul_ext"` for name="mul_ext", `threads = x128)`, helpers defined
  // over and over; docs/BENCHMARKS.md, "names fixed, 20 SFT epochs"): with one layout an answer
  // has one form, and only the computation varies.
  Variety layout = Variety::kVaried;
};

// A style for a pair whose names derive from `label` ("leaky_relu", "scale_relu", "row_sum").
CodeStyle draw_style(Prng& rng, const std::string& label, SurfaceVariety surface = {});

// A surface choice of a family's own (a helper's name, a loop variable, an op's CUDA spelling):
// drawn as always, so the stream of draws stays the same; with a fixed layout the pool's first.
template <typename T>
T surface_pick(Prng& rng, const CodeStyle& style, const std::vector<T>& pool) {
  T drawn = rng.pick(pool);
  return style.fixed_layout ? pool.front() : drawn;
}

}  // namespace dice::data
