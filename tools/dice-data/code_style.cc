#include "tools/dice-data/code_style.h"

#include <vector>

namespace dice::data {
namespace {

// A name from `pool` that is none of `taken` (the pools always hold more names than are taken).
std::string distinct(Prng& rng, const std::vector<std::string>& pool,
                     const std::vector<std::string>& taken) {
  for (;;) {
    const std::string& name = rng.pick(pool);
    bool used = false;
    for (const auto& t : taken) used = used || t == name;
    if (!used) return name;
  }
}

// The first name of every pool draw_style() draws from.
void fix_names(CodeStyle& s, const std::string& label) {
  s.source_var = "cuda_source";
  s.cpp_var = "cpp_source";
  s.kernel = label + "_kernel";
  s.host = label + "_cuda";
  s.module = label + "_ext";
  s.ext_var = "ext";
  s.k_in = "x", s.k_in2 = "y", s.k_out = "out", s.k_n = "n", s.k_idx = "i";
  s.k_row = "row", s.k_tid = "tid", s.k_buf = "buf", s.k_cols = "cols", s.k_col = "col";
  s.h_in = "x", s.h_in2 = "y", s.h_out = "out", s.h_n = "n", s.h_blocks = "blocks";
  s.h_threads = "threads", s.h_rows = "rows", s.h_cols = "cols";
}

// CodeStyle's defaults for every layout choice; the names stay.
void fix_layout(CodeStyle& s) {
  const CodeStyle d;
  s.threads = d.threads, s.grid_stride = d.grid_stride, s.early_return = d.early_return;
  s.size_product = d.size_product, s.restrict_ptrs = d.restrict_ptrs, s.comments = d.comments;
  s.empty_like = d.empty_like, s.device_helper = d.device_helper;
  s.extern_shared = d.extern_shared, s.runtime_include = d.runtime_include;
  s.static_cast_scalars = d.static_cast_scalars, s.const_threads = d.const_threads;
  s.cap_grid = d.cap_grid, s.statements = d.statements, s.annotations = d.annotations;
  s.short_super = d.short_super, s.docstring = d.docstring, s.prefix_comment = d.prefix_comment;
  s.named_inputs = d.named_inputs, s.double_quotes = d.double_quotes;
  s.cpp_one_line = d.cpp_one_line, s.verbose = d.verbose;
  s.fixed_layout = true;
}

}  // namespace

CodeStyle draw_style(Prng& rng, const std::string& label, SurfaceVariety surface) {
  CodeStyle s;
  s.threads = rng.pick(std::vector<int>{128, 256, 256, 512});
  s.grid_stride = rng.chance(40);
  s.early_return = rng.chance(50);
  s.size_product = rng.chance(30);
  s.restrict_ptrs = rng.chance(40);
  s.comments = rng.chance(40);
  s.empty_like = rng.chance(70);
  s.device_helper = rng.chance(30);
  s.extern_shared = rng.chance(50);
  s.runtime_include = rng.chance(25);
  s.static_cast_scalars = rng.chance(70);
  s.const_threads = rng.chance(70);
  s.cap_grid = rng.chance(50);
  s.statements = rng.chance(40);
  s.annotations = rng.chance(50);
  s.short_super = rng.chance(60);
  s.docstring = rng.chance(30);
  s.prefix_comment = rng.chance(40);
  s.named_inputs = rng.chance(30);
  s.double_quotes = rng.chance(60);
  s.cpp_one_line = rng.chance(30);
  s.verbose = rng.below(3);

  s.source_var = rng.pick(std::vector<std::string>{"source", "cuda_source", label + "_source",
                                                   "cuda_src", "kernel_code", label + "_cuda_src"});
  s.cpp_var = rng.pick(std::vector<std::string>{"cpp_src", "cpp_source", label + "_cpp_source",
                                                "cpp_decl", label + "_cpp_src"});
  s.kernel = rng.pick(std::vector<std::string>{label + "_kernel", label + "_fwd_kernel",
                                               "k_" + label, label + "_cuda_kernel"});
  s.host = rng.pick(std::vector<std::string>{label + "_cuda", label + "_forward", "launch_" + label,
                                             label + "_forward_cuda", "run_" + label});
  s.module = rng.pick(std::vector<std::string>{
      label + "_ext", label + "_cuda_ext", "custom_" + label, label + "_module", label + "_op"});
  s.ext_var =
      rng.pick(std::vector<std::string>{"custom_ops", label + "_lib", "ext", "cuda_ops", s.module});

  s.k_in = rng.pick(std::vector<std::string>{"x", "input", "in", "inp", "src"});
  s.k_in2 = distinct(rng, {"y", "other", "b", "rhs"}, {s.k_in});
  s.k_out = distinct(rng, {"out", "output", "dst", "result", "y"}, {s.k_in, s.k_in2});
  s.k_n = rng.pick(std::vector<std::string>{"n", "size", "numel", "total", "num_elements"});
  s.k_idx = rng.pick(std::vector<std::string>{"i", "idx", "index", "tid"});
  s.k_row = rng.pick(std::vector<std::string>{"row", "r", "bid"});
  s.k_tid = rng.pick(std::vector<std::string>{"tid", "t", "thread"});
  s.k_buf = rng.pick(std::vector<std::string>{"buf", "sdata", "shared", "smem", "cache"});
  s.k_cols = rng.pick(std::vector<std::string>{"cols", "n_cols", "row_len", "dim"});
  s.k_col = rng.pick(std::vector<std::string>{"c", "j", "col"});

  s.h_in = rng.pick(std::vector<std::string>{"x", "input", "a", "t"});
  s.h_in2 = distinct(rng, {"y", "other", "b"}, {s.h_in});
  s.h_out = rng.pick(std::vector<std::string>{"out", "output", "result"});
  s.h_n = rng.pick(std::vector<std::string>{"n", "size", "numel", "total"});
  s.h_blocks = rng.pick(std::vector<std::string>{"blocks", "num_blocks", "grid", "grid_size"});
  s.h_threads = rng.pick(std::vector<std::string>{"threads", "block_size", "threads_per_block"});
  s.h_rows = rng.pick(std::vector<std::string>{"rows", "n_rows", "outer"});
  s.h_cols = rng.pick(std::vector<std::string>{"cols", "n_cols", "inner"});
  // After the draws: the same stream whatever the variety.
  if (surface.names == Variety::kFixed) fix_names(s, label);
  if (surface.layout == Variety::kFixed) fix_layout(s);
  return s;
}

}  // namespace dice::data
