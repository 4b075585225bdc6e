#include "tools/dice-data/row_family.h"

#include <vector>

#include "tools/dice-data/code_style.h"
#include "tools/dice-data/cuda_text.h"
#include "tools/dice-data/python_writer.h"
#include "tools/dice-data/sizes.h"

namespace dice::data {
namespace {

// Everything the kernel text needs besides the style's names.
struct RowNames {
  std::string type;        // element type in device code
  std::string r;           // " __restrict__ " or " "
  std::string stride;      // the tree reduction's loop variable
  std::string sum_helper;  // __device__ block reductions
  std::string max_helper;
  std::string weight, bias;  // norm parameters
};

std::string combine(bool max_kind, bool min_kind, const std::string& a, const std::string& b) {
  if (max_kind) return "fmaxf(" + a + ", " + b + ")";
  if (min_kind) return "fminf(" + a + ", " + b + ")";
  return a + " + " + b;
}

std::string shared_decl(const CodeStyle& s) {
  return s.extern_shared
             ? "    extern __shared__ float " + s.k_buf + "[];\n"
             : "    __shared__ float " + s.k_buf + "[" + std::to_string(s.threads) + "];\n";
}

// A block-wide reduction of one float per thread through shared memory; every thread gets the
// result, and the buffer may be reused right after (the closing __syncthreads).
std::string block_helper(const std::string& name, bool max_kind, bool min_kind, const CodeStyle& s,
                         const RowNames& n) {
  const std::string& t = s.k_tid;
  const std::string& b = s.k_buf;
  std::string src = "__device__ float " + name + "(float* " + b + ", float v) {\n";
  src += "    int " + t + " = threadIdx.x;\n";
  src += "    " + b + "[" + t + "] = v;\n    __syncthreads();\n";
  src += "    for (int " + n.stride + " = blockDim.x / 2; " + n.stride + " > 0; " + n.stride +
         " >>= 1) {\n";
  src += "        if (" + t + " < " + n.stride + ") " + b + "[" + t + "] = " +
         combine(max_kind, min_kind, b + "[" + t + "]", b + "[" + t + " + " + n.stride + "]") +
         ";\n";
  src += "        __syncthreads();\n    }\n";
  src += "    float total = " + b + "[0];\n    __syncthreads();\n    return total;\n}\n\n";
  return src;
}

std::string loop(const CodeStyle& s, const std::string& body) {
  return "    for (int " + s.k_col + " = " + s.k_tid + "; " + s.k_col + " < " + s.k_cols + "; " +
         s.k_col + " += blockDim.x) {\n" + body + "    }\n";
}

// The kernel's signature line(s): input, `extra` (weights), output, row length, `tail` (eps).
std::string kernel_head(const CodeStyle& s, const RowNames& n,
                        const std::vector<std::string>& extra,
                        const std::vector<std::string>& tail) {
  std::vector<std::string> params = {"const " + n.type + "*" + n.r + s.k_in};
  params.insert(params.end(), extra.begin(), extra.end());
  params.push_back(n.type + "*" + n.r + s.k_out);
  params.push_back("int " + s.k_cols);
  params.insert(params.end(), tail.begin(), tail.end());
  return wrap_list(0, "__global__ void " + s.kernel, params, " {");
}

std::string reduce_kernel(const RowTask& task, const CodeStyle& s, const RowNames& n) {
  const bool mx = task.op == RowOp::kMax, mn = task.op == RowOp::kMin;
  const std::string init = mx ? "-INFINITY" : mn ? "INFINITY" : "0.0f";
  const std::string elem =
      load_element(task.dtype, s.k_in + "[" + s.k_row + " * " + s.k_cols + " + " + s.k_col + "]");
  std::string src;
  if (s.device_helper) src += block_helper(mx || mn ? n.max_helper : n.sum_helper, mx, mn, s, n);
  if (s.comments)
    src += "// One block per row: strided partial results, then a tree in shared memory.\n";
  src += kernel_head(s, n, {}, {});
  src += shared_decl(s);
  src += "    int " + s.k_row + " = blockIdx.x;\n    int " + s.k_tid + " = threadIdx.x;\n";
  src += "    float acc = " + init + ";\n";
  src += loop(s, (mx || mn) ? "        acc = " + combine(mx, mn, "acc", elem) + ";\n"
                            : "        acc += " + elem + ";\n");
  const std::string& t = s.k_tid;
  const std::string& b = s.k_buf;
  std::string result = "acc";
  if (s.device_helper) {
    src += "    acc = " + (mx || mn ? n.max_helper : n.sum_helper) + "(" + b + ", acc);\n";
  } else {
    result = b + "[0]";
    src += "    " + b + "[" + t + "] = acc;\n    __syncthreads();\n";
    if (s.comments)
      src += "    // Halve the active threads each step (blockDim.x is a power of two).\n";
    src += "    for (int " + n.stride + " = blockDim.x / 2; " + n.stride + " > 0; " + n.stride +
           " >>= 1) {\n";
    src += "        if (" + t + " < " + n.stride + ") {\n";
    src += "            " + b + "[" + t +
           "] = " + combine(mx, mn, b + "[" + t + "]", b + "[" + t + " + " + n.stride + "]") +
           ";\n";
    src += "        }\n        __syncthreads();\n    }\n";
  }
  if (task.op == RowOp::kMean) result += " / " + s.k_cols;
  src += "    if (" + t + " == 0) {\n        " + s.k_out + "[" + s.k_row +
         "] = " + store_element(task.dtype, result) + ";\n    }\n}\n\n";
  return src;
}

std::string norm_kernel(const RowTask& task, const CodeStyle& s, const RowNames& n) {
  const bool layer = task.op == RowOp::kLayerNorm;
  const bool rms = task.op == RowOp::kRmsNorm;
  const bool softmax = task.op == RowOp::kSoftmax || task.op == RowOp::kLogSoftmax;
  const bool weighted = layer || (rms && !n.weight.empty());
  const std::string x = load_element(task.dtype, "row_in[" + s.k_col + "]");
  auto store = [&](const std::string& v) {
    return "        row_out[" + s.k_col + "] = " + store_element(task.dtype, v) + ";\n";
  };
  std::string src;
  if (softmax) src += block_helper(n.max_helper, true, false, s, n);
  src += block_helper(n.sum_helper, false, false, s, n);
  if (s.comments)
    src += "// One block per row; every pass strides over the row, so any length works.\n";
  std::vector<std::string> params;
  if (weighted) params.push_back("const float*" + n.r + n.weight);
  if (layer) params.push_back("const float*" + n.r + n.bias);
  src += kernel_head(s, n, params,
                     softmax ? std::vector<std::string>{} : std::vector<std::string>{"float eps"});
  src += shared_decl(s);
  src += "    int " + s.k_row + " = blockIdx.x;\n    int " + s.k_tid + " = threadIdx.x;\n";
  src +=
      "    const " + n.type + "* row_in = " + s.k_in + " + " + s.k_row + " * " + s.k_cols + ";\n";
  src += "    " + n.type + "* row_out = " + s.k_out + " + " + s.k_row + " * " + s.k_cols + ";\n";
  const std::string& b = s.k_buf;
  if (softmax) {
    if (s.comments) src += "    // Subtract the row maximum so that expf cannot overflow.\n";
    src += "    float m = -INFINITY;\n";
    src += loop(s, "        m = fmaxf(m, " + x + ");\n");
    src += "    m = " + n.max_helper + "(" + b + ", m);\n";
    src += "    float denom = 0.0f;\n";
    src += loop(s, "        denom += expf(" + x + " - m);\n");
    src += "    denom = " + n.sum_helper + "(" + b + ", denom);\n";
    if (task.op == RowOp::kSoftmax) {
      src += loop(s, store("expf(" + x + " - m) / denom"));
    } else {
      src += "    float log_denom = logf(denom);\n";
      src += loop(s, store(x + " - m - log_denom"));
    }
  } else if (layer) {
    src += "    float partial = 0.0f;\n";
    src += loop(s, "        partial += " + x + ";\n");
    src += "    float mean = " + n.sum_helper + "(" + b + ", partial) / " + s.k_cols + ";\n";
    if (s.comments)
      src += "    // Two passes (mean, then squared deviations) for a stable variance.\n";
    src += "    float sq = 0.0f;\n";
    src += loop(s, "        float d = " + x + " - mean;\n        sq += d * d;\n");
    src +=
        "    float rstd = rsqrtf(" + n.sum_helper + "(" + b + ", sq) / " + s.k_cols + " + eps);\n";
    src += loop(s, store("(" + x + " - mean) * rstd * " + n.weight + "[" + s.k_col + "] + " +
                         n.bias + "[" + s.k_col + "]"));
  } else {
    src += "    float sq = 0.0f;\n";
    src += loop(s, "        float v = " + x + ";\n        sq += v * v;\n");
    src += "    float inv_rms = rsqrtf(" + n.sum_helper + "(" + b + ", sq) / " + s.k_cols +
           " + eps);\n";
    src += loop(s, store(x + " * inv_rms" +
                         (weighted ? " * " + n.weight + "[" + s.k_col + "]" : std::string())));
  }
  return src + "}\n\n";
}

std::string launch(const CodeStyle& s, const std::vector<std::string>& args) {
  std::string cfg = s.h_rows + ", " + s.h_threads;
  if (s.extern_shared) cfg += ", " + s.h_threads + " * sizeof(float)";
  return wrap_list(4, s.kernel + "<<<" + cfg + ">>>", args, ";");
}

std::string threads_line(const CodeStyle& s) {
  return std::string("    ") + (s.const_threads ? "const " : "") + "int " + s.h_threads + " = " +
         std::to_string(s.threads) + ";\n";
}

std::string reduce_host(const RowTask& task, const CodeStyle& s) {
  std::string src = "torch::Tensor " + s.host + "(torch::Tensor " + s.h_in + ") {\n";
  src += "    int " + s.h_rows + " = " + s.h_in + ".size(0);\n";
  src += "    int " + s.h_cols + " = " + s.h_in + ".size(" + (s.size_product ? "-1" : "1") + ");\n";
  src += "    auto " + s.h_out + " = torch::empty({" + s.h_rows + (task.keepdim ? ", 1" : "") +
         "}, " + s.h_in + ".options());\n";
  src += threads_line(s);
  src += launch(s, {data_pointer(task.dtype, s.h_in), data_pointer(task.dtype, s.h_out), s.h_cols});
  return src + "    return " + s.h_out + ";\n}\n";
}

std::string norm_host(const RowTask& task, const CodeStyle& s, const RowNames& n, bool three_d) {
  const bool softmax = task.op == RowOp::kSoftmax || task.op == RowOp::kLogSoftmax;
  std::vector<std::string> params = {"torch::Tensor " + s.h_in};
  std::vector<std::string> args = {data_pointer(task.dtype, s.h_in)};
  if (!n.weight.empty()) {
    params.push_back("torch::Tensor " + n.weight);
    args.push_back(n.weight + ".data_ptr<float>()");
  }
  if (task.op == RowOp::kLayerNorm) {
    params.push_back("torch::Tensor " + n.bias);
    args.push_back(n.bias + ".data_ptr<float>()");
  }
  if (!softmax) params.push_back("double eps");
  std::string src = wrap_list(0, "torch::Tensor " + s.host, params, " {");
  src += "    auto " + s.h_out + " = " +
         (s.empty_like ? "torch::empty_like(" + s.h_in + ")"
                       : "torch::empty(" + s.h_in + ".sizes(), " + s.h_in + ".options())") +
         ";\n";
  if (three_d || s.size_product) {
    src += "    int " + s.h_cols + " = " + s.h_in + ".size(-1);\n";
    src += "    int " + s.h_rows + " = " + s.h_in + ".numel() / " + s.h_cols + ";\n";
  } else {
    src += "    int " + s.h_rows + " = " + s.h_in + ".size(0);\n";
    src += "    int " + s.h_cols + " = " + s.h_in + ".size(1);\n";
  }
  src += threads_line(s);
  args.push_back(data_pointer(task.dtype, s.h_out));
  args.push_back(s.h_cols);
  if (!softmax) args.push_back(s.static_cast_scalars ? "static_cast<float>(eps)" : "(float)eps");
  src += launch(s, args);
  return src + "    return " + s.h_out + ";\n}\n";
}

// The reference's reduction call along the last dimension.
std::string reduce_call(const RowTask& task, const std::string& dim, Prng& rng) {
  const std::string name = row_op_name(task.op);
  const std::string kd =
      task.keepdim ? ", keepdim=True" : (rng.chance(30) ? ", keepdim=False" : "");
  const bool extreme = task.op == RowOp::kMax || task.op == RowOp::kMin;
  switch (rng.below(3)) {
    case 0:
      return extreme ? "torch.a" + name + "(x, dim=" + dim + kd + ")"
                     : "torch." + name + "(x, dim=" + dim + kd + ")";
    case 1:
      return extreme ? "torch." + name + "(x, dim=" + dim + kd + ").values"
                     : "x." + name + "(dim=" + dim + kd + ")";
    default:
      return extreme ? "x." + name + "(dim=" + dim + kd + ")[0]"
                     : "torch." + name + "(x, " + dim + kd + ")";
  }
}

}  // namespace

bool is_reduction(RowOp op) {
  return op == RowOp::kSum || op == RowOp::kMean || op == RowOp::kMax || op == RowOp::kMin;
}

const char* row_op_name(RowOp op) {
  switch (op) {
    case RowOp::kSum:
      return "sum";
    case RowOp::kMean:
      return "mean";
    case RowOp::kMax:
      return "max";
    case RowOp::kMin:
      return "min";
    case RowOp::kSoftmax:
      return "softmax";
    case RowOp::kLogSoftmax:
      return "log_softmax";
    case RowOp::kLayerNorm:
      return "layer_norm";
    default:
      return "rms_norm";
  }
}

std::string reduce_key(RowOp op, bool keepdim) {
  return std::string(row_op_name(op)) + "/keepdim=" + (keepdim ? "True" : "False");
}

std::string norm_key(RowOp op, Dtype dtype) {
  return std::string(row_op_name(op)) + "/" + dtype_name(dtype);
}

namespace {

// What a row task's reference and candidate are made of while the op's own part is drawn.
struct RowDraft {
  ReferenceSpec ref;
  CandidateSpec cand;
  std::string call;  // the candidate's call of the extension, without its closing ")"
};

// The kernel text's names; draws in a fixed order (the curriculum is byte-identical per seed).
RowNames draw_row_names(const RowTask& task, const CodeStyle& style, bool rms_weight, Prng& rng) {
  RowNames n;
  n.type = cuda_type(task.dtype);
  n.r = style.restrict_ptrs ? " __restrict__ " : " ";
  n.stride = surface_pick(rng, style, std::vector<std::string>{"s", "stride", "offset"});
  n.sum_helper = surface_pick(
      rng, style, std::vector<std::string>{"block_sum", "block_reduce_sum", "reduce_sum"});
  n.max_helper = surface_pick(
      rng, style, std::vector<std::string>{"block_max", "block_reduce_max", "reduce_max"});
  if (task.op == RowOp::kMin) n.max_helper = "block_min";
  if (task.op == RowOp::kLayerNorm || rms_weight) {
    const int drawn = rng.below(3);
    const int pair = style.fixed_layout ? 0 : drawn;
    n.weight = pair == 0 ? "weight" : pair == 1 ? "gamma" : "w";
    n.bias = pair == 0 ? "bias" : pair == 1 ? "beta" : "b";
  }
  return n;
}

// sum, mean, max, ...: over `last`, or over a dim given at construction (30%).
void reduction_forward(const RowTask& task, const std::string& last, RowDraft* d, Prng& rng) {
  std::string dim = last;
  if (rng.chance(30)) {
    d->ref.init_args.push_back({"reduce_dim", "1"});
    d->ref.init_body.push_back("self.reduce_dim = reduce_dim");
    d->cand.init_body.push_back("self.reduce_dim = reduce_dim");
    dim = "self.reduce_dim";
  }
  d->ref.forward_body = {"return " + reduce_call(task, dim, rng)};
  const std::string name = row_op_name(task.op);
  d->ref.doc = std::string(task.op == RowOp::kMean ? "Mean" : "A " + name) +
               " over the last dimension" + (task.keepdim ? ", keeping it." : ".");
}

// softmax / log_softmax in one of three spellings.
void softmax_forward(const RowTask& task, const std::string& last, RowDraft* d, Prng& rng) {
  const bool log = task.op == RowOp::kLogSoftmax;
  const int form = rng.below(3);
  d->ref.forward_body = {"return " +
                         std::string(form == 0   ? "torch."
                                     : form == 1 ? "torch.nn.functional."
                                                 : "x.") +
                         row_op_name(task.op) + (form == 2 ? "(dim=" : "(x, dim=") + last + ")"};
  d->ref.doc = std::string(log ? "Log-softmax" : "Softmax") + " over the last dimension.";
}

// nn.LayerNorm, computed in float for half types (`upcast`).
void layer_norm_forward(const Sizes& sizes, bool upcast, RowDraft* d, Prng& rng) {
  const std::string attr = rng.pick(std::vector<std::string>{"norm", "ln", "layer_norm"});
  d->ref.init_args.push_back({sizes.dim_name, ""});
  std::string ctor = "nn.LayerNorm(" + sizes.dim_name;
  if (rng.chance(50)) {
    d->ref.init_args.push_back({"eps", rng.pick(std::vector<std::string>{"1e-5", "1e-6"})});
    ctor += ", eps=eps";
  }
  d->ref.init_body = {"self." + attr + " = " + ctor + ")"};
  d->cand.init_body = d->ref.init_body;
  d->ref.forward_body = {upcast ? "return self." + attr + "(x.float()).to(x.dtype)"
                                : "return self." + attr + "(x)"};
  d->call += ", self." + attr + ".weight, self." + attr + ".bias, self." + attr + ".eps";
  d->ref.doc = "Layer normalisation over the last dimension.";
}

// RMS normalisation written out, with a weight or without (`rms_weight`), in one of two forms.
void rms_norm_forward(const Sizes& sizes, bool upcast, bool rms_weight, RowDraft* d, Prng& rng) {
  if (rms_weight) d->ref.init_args.push_back({sizes.dim_name, ""});
  d->ref.init_args.push_back({"eps", rng.pick(std::vector<std::string>{"1e-5", "1e-6", "1e-8"})});
  d->ref.init_body = {"self.eps = eps"};
  if (rms_weight)
    d->ref.init_body.push_back("self.weight = nn.Parameter(torch.ones(" + sizes.dim_name + "))");
  d->cand.init_body = d->ref.init_body;
  const std::string h = upcast ? "h" : "x";
  if (upcast) d->ref.forward_body.push_back("h = x.float()");
  const std::string scaled =
      rng.chance(50)
          ? h + " * torch.rsqrt(" + h + ".pow(2).mean(dim=-1, keepdim=True) + self.eps)"
          : h + " / torch.sqrt(torch.mean(" + h + " * " + h + ", dim=-1, keepdim=True) + self.eps)";
  std::string out = rms_weight ? scaled + " * self.weight" : scaled;
  if (upcast) out = "(" + out + ").to(x.dtype)";
  d->ref.forward_body.push_back("return " + out);
  d->call += std::string(rms_weight ? ", self.weight" : "") + ", self.eps";
  d->ref.doc = "RMS normalisation over the last dimension.";
}

// The candidate's CUDA source and the host function's declaration.
void row_extension(const RowTask& task, const CodeStyle& style, const RowNames& n, bool three_d,
                   CandidateSpec* cand) {
  const bool reduction = is_reduction(task.op);
  std::string src = "#include <torch/extension.h>\n";
  if (style.runtime_include) src += "#include <cuda_runtime.h>\n";
  src += cuda_header(task.dtype) + "\n";
  src += reduction ? reduce_kernel(task, style, n) + reduce_host(task, style)
                   : norm_kernel(task, style, n) + norm_host(task, style, n, three_d);
  cand->cuda_source = src;
  std::string decl = "torch::Tensor " + style.host + "(torch::Tensor " + style.h_in;
  if (!n.weight.empty()) decl += ", torch::Tensor " + n.weight;
  if (task.op == RowOp::kLayerNorm) decl += ", torch::Tensor " + n.bias;
  if (!reduction && task.op != RowOp::kSoftmax && task.op != RowOp::kLogSoftmax)
    decl += ", double eps";
  cand->declarations = {decl + ");"};
  cand->functions = {style.host};
}

}  // namespace

KernelPair render_row(const RowTask& task, Prng& rng, SurfaceVariety surface) {
  const bool reduction = is_reduction(task.op);
  const std::string name = row_op_name(task.op);
  const std::string label = reduction ? "row_" + name : name;
  const CodeStyle style = draw_style(rng, label, surface);
  const bool three_d = !reduction && rng.chance(25);
  const Sizes sizes = draw_sizes(rng, three_d);
  const bool upcast = task.dtype != Dtype::kFloat32;  // norms with weights compute in float
  const bool rms_weight = task.op == RowOp::kRmsNorm && rng.chance(60);
  const bool dim_fixed = task.op == RowOp::kLayerNorm || rms_weight;
  const RowNames n = draw_row_names(task, style, rms_weight, rng);

  RowDraft d;
  d.ref.sizes = sizes.list();
  d.ref.forward_args = {"x"};
  std::string shape =
      sizes.batch_name + (three_d ? ", " + sizes.seq_name : "") + ", " + sizes.dim_name;
  d.ref.inputs = {python_cast(task.dtype, "torch.randn(" + shape + ")", rng.chance(30))};
  const std::string last = three_d ? rng.pick(std::vector<std::string>{"-1", "2"})
                                   : rng.pick(std::vector<std::string>{"-1", "1"});
  d.call = style.ext_var + "." + style.host + "(x";
  if (reduction) {
    reduction_forward(task, last, &d, rng);
  } else if (task.op == RowOp::kSoftmax || task.op == RowOp::kLogSoftmax) {
    softmax_forward(task, last, &d, rng);
  } else if (task.op == RowOp::kLayerNorm) {
    layer_norm_forward(sizes, upcast, &d, rng);
  } else {
    rms_norm_forward(sizes, upcast, rms_weight, &d, rng);
  }
  d.cand.comment =
      reduction ? "Row-wise " + name + " reduction in CUDA" : "CUDA kernel for " + name;
  d.cand.forward_body = {"return " + d.call + ")"};
  row_extension(task, style, n, three_d, &d.cand);

  KernelPair pair;
  pair.family = reduction ? "reduce" : "norm";
  pair.level = "3";
  pair.dtype = dtype_name(task.dtype);
  pair.op = reduction ? reduce_key(task.op, task.keepdim) : name;
  pair.keys = {reduction ? reduce_key(task.op, task.keepdim) : norm_key(task.op, task.dtype)};
  pair.op_key = pair.keys[0];
  pair.pytorch_code = render_reference(d.ref, style);
  pair.prefix = render_prefix(d.cand, style);
  pair.middle = render_middle(d.cand, style);
  pair.suffix = render_suffix(d.cand, d.ref, style);
  pair.shape_variants = draw_variants(rng, sizes, dim_fixed, style.threads);
  return pair;
}

}  // namespace dice::data
