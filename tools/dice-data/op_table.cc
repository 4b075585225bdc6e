#include "tools/dice-data/op_table.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>

namespace dice::data {
namespace {

PythonForm call(const std::string& text) {
  return {text, 4, 0, false};
}

std::vector<UnaryOp> make_unary_ops() {
  // PyTorch's definitions, written out: softplus is x if x * beta > 20 (its default threshold)
  // else log1p(exp(x * beta)) / beta; elu is alpha * expm1(x) below zero; gelu is the erf form,
  // gelu_tanh the approximate="tanh" one.
  std::vector<UnaryOp> ops = {
      {"relu",
       {},
       {},
       {call("torch.relu({x})"), call("torch.nn.functional.relu({x})")},
       {"fmaxf({v}, 0.0f)", "{v} > 0.0f ? {v} : 0.0f"}},
      {"leaky_relu",
       {"negative_slope"},
       {{"0.01"}, {"0.02"}, {"0.05"}, {"0.1"}, {"0.2"}, {"0.3"}},
       {call("torch.nn.functional.leaky_relu({x}, negative_slope={0})")},
       {"{v} > 0.0f ? {v} : {v} * {0}"}},
      {"elu",
       {"alpha"},
       {{"0.5"}, {"0.8"}, {"1.0"}, {"1.5"}, {"2.0"}},
       {call("torch.nn.functional.elu({x}, alpha={0})")},
       {"{v} > 0.0f ? {v} : {0} * expm1f({v})"}},
      {"sigmoid", {}, {}, {call("torch.sigmoid({x})")}, {"1.0f / (1.0f + expf(-{v}))"}},
      {"tanh", {}, {}, {call("torch.tanh({x})")}, {"tanhf({v})"}},
      {"silu", {}, {}, {call("torch.nn.functional.silu({x})")}, {"{v} / (1.0f + expf(-{v}))"}},
      {"gelu",
       {},
       {},
       {call("torch.nn.functional.gelu({x})")},
       {"0.5f * {v} * (1.0f + erff({v} * 0.70710678118654752f))"}},
      {"gelu_tanh",
       {},
       {},
       {call("torch.nn.functional.gelu({x}, approximate=\"tanh\")")},
       {"0.5f * {v} * (1.0f + tanhf(0.79788456080286536f * ({v} + 0.044715f * {v} * {v} * "
        "{v})))"}},
      {"softplus",
       {"beta"},
       {{"0.5"}, {"1.0"}, {"2.0"}, {"3.0"}},
       {call("torch.nn.functional.softplus({x}, beta={0})")},
       {"{v} * {0} > 20.0f ? {v} : log1pf(expf({v} * {0})) / {0}"}},
      {"hardtanh",
       {"min_val", "max_val"},
       {{"-1.0", "1.0"},
        {"-0.5", "0.5"},
        {"-2.0", "2.0"},
        {"0.0", "6.0"},
        {"-0.25", "0.75"},
        {"-3.0", "1.0"}},
       {call("torch.nn.functional.hardtanh({x}, min_val={0}, max_val={1})")},
       {"fminf(fmaxf({v}, {0}), {1})"}},
      {"clamp",
       {"clamp_min", "clamp_max"},
       {{"-1.0", "1.0"},
        {"-0.5", "0.5"},
        {"0.0", "1.0"},
        {"-2.0", "0.5"},
        {"-0.1", "0.1"},
        {"-1.5", "2.5"}},
       {call("torch.clamp({x}, min={0}, max={1})"), {"{x}.clamp(min={0}, max={1})", 4, 4, false}},
       {"fminf(fmaxf({v}, {0}), {1})"}},
      {"abs", {}, {}, {call("torch.abs({x})"), {"{x}.abs()", 4, 4, false}}, {"fabsf({v})"}},
      {"neg", {}, {}, {{"-{x}", 3, 3, false}, call("torch.neg({x})")}, {"-{v}"}},
      {"square", {}, {}, {call("torch.square({x})"), {"{x} * {x}", 2, 4, true}}, {"{v} * {v}"}},
      {"exp", {}, {}, {call("torch.exp({x})")}, {"expf({v})"}},
      {"scale",
       {"scale"},
       {{"0.5"}, {"1.5"}, {"2.0"}, {"3.0"}, {"0.25"}, {"-1.5"}, {"0.1"}, {"2.5"}},
       {{"{x} * {0}", 2, 2, false}},
       {"{v} * {0}"}},
      {"shift",
       {"shift"},
       {{"0.5"}, {"-0.5"}, {"1.0"}, {"0.25"}, {"-1.0"}, {"0.1"}, {"-0.2"}},
       {{"{x} + {0}", 1, 1, false}},
       {"{v} + {0}"}},
  };
  return ops;
}

std::vector<BinaryOp> make_binary_ops() {
  return {
      {"add", {{"{x} + {y}", 1, 0, false}, call("torch.add({x}, {y})")}, "{a} + {b}", false},
      {"sub", {{"{x} - {y}", 1, 0, false}, call("torch.sub({x}, {y})")}, "{a} - {b}", false},
      {"mul", {{"{x} * {y}", 2, 0, false}, call("torch.mul({x}, {y})")}, "{a} * {b}", false},
      {"div", {{"{x} / {y}", 2, 0, false}, call("torch.div({x}, {y})")}, "{a} / {b}", true},
      {"maximum", {call("torch.maximum({x}, {y})")}, "fmaxf({a}, {b})", false},
      {"minimum", {call("torch.minimum({x}, {y})")}, "fminf({a}, {b})", false},
  };
}

double largest_value(const UnaryOp& op) {
  double m = 0;
  for (const auto& set : op.values)
    for (const auto& v : set) m = std::max(m, std::fabs(std::strtod(v.c_str(), nullptr)));
  return m;
}

}  // namespace

const char* broadcast_name(Broadcast broadcast) {
  switch (broadcast) {
    case Broadcast::kRow:
      return "row";
    case Broadcast::kCol:
      return "col";
    default:
      return "full";
  }
}

const std::vector<UnaryOp>& unary_ops() {
  static const std::vector<UnaryOp> kOps = make_unary_ops();
  return kOps;
}

const std::vector<BinaryOp>& binary_ops() {
  static const std::vector<BinaryOp> kOps = make_binary_ops();
  return kOps;
}

const UnaryOp* find_unary(const std::string& name) {
  for (const auto& op : unary_ops())
    if (op.name == name) return &op;
  return nullptr;
}

std::string param_key(const UnaryOp& op, int value_index) {
  std::string key = op.name + "(";
  const auto& set = op.values[static_cast<std::size_t>(value_index)];
  for (std::size_t i = 0; i < op.params.size(); ++i) {
    if (i) key += ",";
    key += op.params[i] + "=" + set[i];
  }
  return key + ")";
}

std::string binary_key(const BinaryOp& op, Broadcast broadcast) {
  return op.name + "[" + broadcast_name(broadcast) + "]";
}

double magnitude_after(const UnaryOp& op, double m) {
  const std::string& n = op.name;
  if (n == "sigmoid" || n == "tanh") return 1.0;
  if (n == "exp") return std::exp(m);
  if (n == "square") return m * m;
  if (n == "scale") return m * largest_value(op);
  if (n == "shift") return m + largest_value(op);
  if (n == "elu") return std::max(m, largest_value(op));
  if (n == "hardtanh" || n == "clamp") return std::min(m, largest_value(op));
  if (n == "softplus") return m + 1.5;  // log(2) / beta with beta >= 0.5
  return m + 0.5;                       // relu, leaky_relu, silu, gelu*, abs, neg
}

double magnitude_after(const BinaryOp& op, double m) {
  if (op.name == "mul") return m * m;
  if (op.name == "div") return 2.0 * m;  // y >= 0.5
  if (op.name == "add" || op.name == "sub") return 2.0 * m;
  return m;
}

std::string cuda_float(const std::string& python_literal) {
  return python_literal + "f";
}

}  // namespace dice::data
