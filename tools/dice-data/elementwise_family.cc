#include "tools/dice-data/elementwise_family.h"

#include <algorithm>

#include "tools/dice-data/code_style.h"
#include "tools/dice-data/cuda_text.h"
#include "tools/dice-data/python_writer.h"
#include "tools/dice-data/sizes.h"

namespace dice::data {
namespace {

// "x + -0.5" reads as "x - 0.5" (in Python and in CUDA).
std::string tidy_signs(std::string s) {
  for (std::size_t at = s.find(" + -"); at != std::string::npos; at = s.find(" + -", at))
    s.replace(at, 4, " - ");
  return s;
}

// The parameters of a step as the reference names them (self.alpha or a literal) and as the
// kernel does (a float parameter or a float literal).
std::vector<std::pair<std::string, std::string>> step_params(const ElementStep& step, bool cuda) {
  std::vector<std::pair<std::string, std::string>> out;
  for (std::size_t i = 0; i < step.op->params.size(); ++i) {
    const std::string& name = step.op->params[i];
    const std::string& value = step.op->values[static_cast<std::size_t>(step.value_index)][i];
    std::string text =
        step.init_arg ? (cuda ? name : "self." + name) : (cuda ? cuda_float(value) : value);
    out.emplace_back(std::to_string(i), text);
  }
  return out;
}

struct PyExpr {
  std::string text;
  int precedence = 4;
  bool plain_name = true;  // a bare variable: may be repeated (x * x)
};

PyExpr apply_form(const PythonForm& form, const PyExpr& operand,
                  std::vector<std::pair<std::string, std::string>> values) {
  std::string x = operand.precedence < form.operand_min ? "(" + operand.text + ")" : operand.text;
  values.emplace_back("x", x);
  return {tidy_signs(fill(form.text, values)), form.precedence, false};
}

const PythonForm& choose_form(Prng& rng, const std::vector<PythonForm>& forms,
                              const PyExpr& operand) {
  const PythonForm& form = rng.pick(forms);
  return form.repeats_operand && !operand.plain_name ? forms[0] : form;
}

std::string join(const std::vector<std::string>& parts, const std::string& sep) {
  std::string s;
  for (std::size_t i = 0; i < parts.size(); ++i) s += (i ? sep : "") + parts[i];
  return s;
}

std::vector<std::string> op_names(const ElementwiseTask& task) {
  std::vector<std::string> names;
  if (task.binary) names.push_back(task.binary->name);
  for (const auto& s : task.steps) names.push_back(s.op->name);
  return names;
}

// The reference's forward body: one expression, or one assignment per op.
std::vector<std::string> reference_forward(const ElementwiseTask& task, const CodeStyle& style,
                                           Prng& rng) {
  PyExpr cur{"x", 4, true};
  std::vector<std::string> body;
  const std::string var = rng.pick(std::vector<std::string>{"x", "out", "h"});
  const std::size_t total = task.steps.size() + (task.binary ? 1 : 0);
  std::size_t emitted = 0;
  auto emit = [&](PyExpr next) {
    ++emitted;
    if (!style.statements) {
      cur = next;
    } else if (emitted == total) {
      body.push_back("return " + next.text);
    } else {
      body.push_back(var + " = " + next.text);
      cur = {var, 4, true};
    }
  };
  if (task.binary) {
    const PythonForm& form = rng.pick(task.binary->python);
    emit({fill(form.text, {{"x", "x"}, {"y", "y"}}), form.precedence, false});
  }
  for (const auto& step : task.steps)
    emit(apply_form(choose_form(rng, step.op->python, cur), cur, step_params(step, false)));
  if (!style.statements) body.push_back("return " + cur.text);
  return body;
}

std::string input_expr(const std::string& shape, bool positive, Dtype dtype, bool alt) {
  const std::string base =
      positive ? "torch.rand(" + shape + ") + 0.5" : "torch.randn(" + shape + ")";
  if (dtype == Dtype::kFloat32) return base;
  return python_cast(dtype, positive ? "(" + base + ")" : base, alt);
}

struct CudaNames {
  std::string value;           // the float being computed
  std::string helper_pattern;  // "{name}_op" etc. for device helpers
};

std::string helper_name(const CudaNames& names, const std::string& op) {
  return fill(names.helper_pattern, {{"name", op}});
}

// __device__ helpers, one per op, when the style asks for them.
std::string device_helpers(const ElementwiseTask& task, const CudaNames& names) {
  std::string s;
  if (task.binary) {
    s += "__device__ __forceinline__ float " + helper_name(names, task.binary->name) +
         "(float a, float b) {\n    return " + fill(task.binary->cuda, {{"a", "a"}, {"b", "b"}}) +
         ";\n}\n\n";
  }
  for (const auto& step : task.steps) {
    std::string params = "float v";
    if (step.init_arg)
      for (const auto& p : step.op->params) params += ", float " + p;
    auto values = step_params(step, true);
    values.emplace_back("v", "v");
    s += "__device__ __forceinline__ float " + helper_name(names, step.op->name) + "(" + params +
         ") {\n    return " + tidy_signs(fill(step.op->cuda[0], values)) + ";\n}\n\n";
  }
  return s;
}

// The per-element statements, at the loop body's indentation.
std::string element_body(const ElementwiseTask& task, const CodeStyle& s, const CudaNames& n,
                         Prng& rng, const std::string& indent) {
  const std::string& v = n.value;
  std::string body;
  if (task.binary) {
    std::string other = s.k_in2 + "[" + s.k_idx + "]";
    if (task.broadcast == Broadcast::kRow) other = s.k_in2 + "[" + s.k_idx + " % " + s.k_cols + "]";
    if (task.broadcast == Broadcast::kCol) other = s.k_in2 + "[" + s.k_idx + " / " + s.k_cols + "]";
    body += indent + "float xv = " + load_element(task.dtype, s.k_in + "[" + s.k_idx + "]") + ";\n";
    body += indent + "float yv = " + load_element(task.dtype, other) + ";\n";
    const std::string combined = s.device_helper
                                     ? helper_name(n, task.binary->name) + "(xv, yv)"
                                     : fill(task.binary->cuda, {{"a", "xv"}, {"b", "yv"}});
    body += indent + "float " + v + " = " + combined + ";\n";
  } else {
    body += indent + "float " + v + " = " + load_element(task.dtype, s.k_in + "[" + s.k_idx + "]") +
            ";\n";
  }
  for (const auto& step : task.steps) {
    if (s.device_helper) {
      std::string args = v;
      if (step.init_arg)
        for (const auto& p : step.op->params) args += ", " + p;
      body += indent + v + " = " + helper_name(n, step.op->name) + "(" + args + ");\n";
    } else {
      auto values = step_params(step, true);
      values.emplace_back("v", v);
      body += indent + v + " = " + tidy_signs(fill(surface_pick(rng, s, step.op->cuda), values)) +
              ";\n";
    }
  }
  body += indent + s.k_out + "[" + s.k_idx + "] = " + store_element(task.dtype, v) + ";\n";
  return body;
}

std::string kernel_source(const ElementwiseTask& task, const CodeStyle& s, int rank, Prng& rng) {
  CudaNames n;
  n.value = surface_pick(rng, s, std::vector<std::string>{"v", "val", "acc"});
  n.helper_pattern =
      surface_pick(rng, s, std::vector<std::string>{"{name}_op", "apply_{name}", "dev_{name}"});
  const std::string type = cuda_type(task.dtype);
  const std::string r = s.restrict_ptrs ? " __restrict__ " : " ";
  const bool needs_cols = task.binary && task.broadcast != Broadcast::kFull;
  std::vector<std::string> scalars;
  for (const auto& step : task.steps)
    if (step.init_arg)
      for (const auto& p : step.op->params) scalars.push_back(p);

  std::string src = "#include <torch/extension.h>\n";
  if (s.runtime_include) src += "#include <cuda_runtime.h>\n";
  src += cuda_header(task.dtype) + "\n";
  if (s.device_helper) src += device_helpers(task, n);
  if (s.comments) {
    src += task.dtype == Dtype::kFloat32 ? "// Each element is computed independently.\n"
                                         : "// Elements are loaded as float, computed in float "
                                           "and rounded once on the store.\n";
  }
  std::vector<std::string> params = {"const " + type + "*" + r + s.k_in};
  if (task.binary) params.push_back("const " + type + "*" + r + s.k_in2);
  params.push_back(type + "*" + r + s.k_out);
  for (const auto& p : scalars) params.push_back("float " + p);
  params.push_back("int " + s.k_n);
  if (needs_cols) params.push_back("int " + s.k_cols);
  src += wrap_list(0, "__global__ void " + s.kernel, params, " {");
  const std::string first = "blockIdx.x * blockDim.x + threadIdx.x";
  if (s.grid_stride) {
    src += "    for (int " + s.k_idx + " = " + first + "; " + s.k_idx + " < " + s.k_n + "; " +
           s.k_idx + " += blockDim.x * gridDim.x) {\n";
    src += element_body(task, s, n, rng, "        ");
    src += "    }\n";
  } else if (s.early_return) {
    src += "    int " + s.k_idx + " = " + first + ";\n";
    src += "    if (" + s.k_idx + " >= " + s.k_n + ") return;\n";
    src += element_body(task, s, n, rng, "    ");
  } else {
    src += "    int " + s.k_idx + " = " + first + ";\n";
    src += "    if (" + s.k_idx + " < " + s.k_n + ") {\n";
    src += element_body(task, s, n, rng, "        ");
    src += "    }\n";
  }
  src += "}\n\n";

  // The host function.
  std::vector<std::string> host_params = {"torch::Tensor " + s.h_in};
  if (task.binary) host_params.push_back("torch::Tensor " + s.h_in2);
  for (const auto& p : scalars) host_params.push_back("double " + p);
  src += wrap_list(0, "torch::Tensor " + s.host, host_params, " {");
  src += "    auto " + s.h_out + " = " +
         (s.empty_like ? "torch::empty_like(" + s.h_in + ")"
                       : "torch::empty(" + s.h_in + ".sizes(), " + s.h_in + ".options())") +
         ";\n";
  std::string count = s.h_in + ".numel()";
  if (s.size_product) {
    count = s.h_in + ".size(0)";
    for (int d = 1; d < rank; ++d) count += " * " + s.h_in + ".size(" + std::to_string(d) + ")";
  }
  src += "    int " + s.h_n + " = " + count + ";\n";
  if (needs_cols) src += "    int " + s.h_cols + " = " + s.h_in + ".size(1);\n";
  src += std::string("    ") + (s.const_threads ? "const " : "") + "int " + s.h_threads + " = " +
         std::to_string(s.threads) + ";\n";
  src += "    int " + s.h_blocks + " = (" + s.h_n + " + " + s.h_threads + " - 1) / " + s.h_threads +
         ";\n";
  if (s.grid_stride && s.cap_grid) {
    // A grid-stride loop covers any size with a bounded grid.
    src += "    if (" + s.h_blocks + " > 1024) " + s.h_blocks + " = 1024;\n";
  }
  if (s.comments) src += "    // One thread per element (rounded up to whole blocks).\n";
  std::vector<std::string> args = {data_pointer(task.dtype, s.h_in)};
  if (task.binary) args.push_back(data_pointer(task.dtype, s.h_in2));
  args.push_back(data_pointer(task.dtype, s.h_out));
  for (const auto& p : scalars)
    args.push_back(s.static_cast_scalars ? "static_cast<float>(" + p + ")" : "(float)" + p);
  args.push_back(s.h_n);
  if (needs_cols) args.push_back(s.h_cols);
  src += wrap_list(4, s.kernel + "<<<" + s.h_blocks + ", " + s.h_threads + ">>>", args, ";");
  src += "    return " + s.h_out + ";\n}\n";
  return src;
}

}  // namespace

std::string chain_key(const ElementwiseTask& task) {
  return join(op_names(task), ">");
}

KernelPair render_elementwise(const ElementwiseTask& task, Prng& rng, SurfaceVariety surface) {
  const std::vector<std::string> names = op_names(task);
  std::vector<std::string> label_parts(
      names.begin(), names.begin() + static_cast<long>(std::min<std::size_t>(names.size(), 3)));
  const std::string label = join(label_parts, "_");
  const CodeStyle style = draw_style(rng, label, surface);
  const bool three_d = !task.binary && rng.chance(25);
  const Sizes sizes = draw_sizes(rng, three_d);
  const bool alt_cast = rng.chance(30);

  std::string shape =
      sizes.batch_name + (three_d ? ", " + sizes.seq_name : "") + ", " + sizes.dim_name;
  ReferenceSpec ref;
  ref.sizes = sizes.list();
  ref.forward_args = {"x"};
  ref.inputs = {input_expr(shape, false, task.dtype, alt_cast)};
  if (task.binary) {
    ref.forward_args.push_back("y");
    std::string y_shape = shape;
    if (task.broadcast == Broadcast::kRow) y_shape = sizes.dim_name;
    if (task.broadcast == Broadcast::kCol) y_shape = sizes.batch_name + ", 1";
    ref.inputs.push_back(input_expr(y_shape, task.binary->positive_rhs, task.dtype, alt_cast));
  }
  CandidateSpec cand;
  std::string call_args = "x" + std::string(task.binary ? ", y" : "");
  for (const auto& step : task.steps) {
    if (!step.init_arg) continue;
    for (std::size_t i = 0; i < step.op->params.size(); ++i) {
      const std::string& p = step.op->params[i];
      ref.init_args.push_back({p, step.op->values[static_cast<std::size_t>(step.value_index)][i]});
      ref.init_body.push_back("self." + p + " = " + p);
      cand.init_body.push_back("self." + p + " = " + p);
      call_args += ", self." + p;
    }
  }
  ref.forward_body = reference_forward(task, style, rng);
  if (task.family == "chain") {
    ref.doc = "Fused element-wise chain: " + join(names, ", ") + ".";
    cand.comment = "Fused CUDA kernel: " + join(names, " -> ");
  } else if (task.binary) {
    ref.doc = "Element-wise " + task.binary->name + " of x and a broadcast y.";
    cand.comment = "Custom CUDA kernel for broadcast " + task.binary->name;
  } else {
    ref.doc = "Applies " + names[0] + " element-wise.";
    cand.comment = "Custom CUDA kernel for " + names[0];
  }

  cand.cuda_source = kernel_source(task, style, three_d ? 3 : 2, rng);
  std::string decl = "torch::Tensor " + style.host + "(torch::Tensor " + style.h_in;
  if (task.binary) decl += ", torch::Tensor " + style.h_in2;
  for (const auto& step : task.steps)
    if (step.init_arg)
      for (const auto& p : step.op->params) decl += ", double " + p;
  cand.declarations = {decl + ");"};
  cand.functions = {style.host};
  cand.forward_body = {"return " + style.ext_var + "." + style.host + "(" + call_args + ")"};

  KernelPair pair;
  pair.family = task.family;
  pair.level = task.level;
  pair.dtype = dtype_name(task.dtype);
  pair.op = task.family == "chain" ? chain_key(task)
            : task.binary          ? binary_key(*task.binary, task.broadcast)
                                   : task.steps[0].op->name;
  const ElementStep* single = task.family == "unary" ? &task.steps[0] : nullptr;
  pair.op_key =
      single && !single->op->params.empty() ? param_key(*single->op, single->value_index) : pair.op;
  if (task.family == "chain") pair.keys.push_back(chain_key(task));
  if (task.binary) pair.keys.push_back(binary_key(*task.binary, task.broadcast));
  for (const auto& step : task.steps)
    if (!step.op->params.empty()) pair.keys.push_back(param_key(*step.op, step.value_index));
  pair.pytorch_code = render_reference(ref, style);
  pair.prefix = render_prefix(cand, style);
  pair.middle = render_middle(cand, style);
  pair.suffix = render_suffix(cand, ref, style);
  pair.shape_variants = draw_variants(rng, sizes, false, style.threads);
  return pair;
}

}  // namespace dice::data
