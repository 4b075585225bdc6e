// The element-wise operations of levels 1 and 2: how each one is written in a reference
// (PyTorch) and in a kernel (CUDA, on a float), the scalar parameters it takes and the values
// they may have. Each CUDA form computes what PyTorch computes for that op (same formula, same
// thresholds), so a kernel agrees with its reference to float rounding.
#pragma once

#include <string>
#include <vector>

namespace dice::data {

// One way of writing an op in Python. Precedences: 4 a call or name, 3 unary minus, 2 "*" and
// "/", 1 "+" and "-"; an operand of lower precedence than `operand_min` is parenthesised.
struct PythonForm {
  std::string text;  // "{x}" the operand (for binary ops also "{y}"), "{0}", "{1}" the parameters
  int precedence = 4;
  int operand_min = 0;
  bool repeats_operand = false;  // names {x} twice: only used when the operand is a plain name
};

struct UnaryOp {
  std::string name;                 // "leaky_relu": held-out keys, counts, kernel names
  std::vector<std::string> params;  // constructor argument names, e.g. {"negative_slope"}
  // The values a task may give its parameters, each a list of Python literals (one per param).
  std::vector<std::vector<std::string>> values;
  std::vector<PythonForm> python;
  // CUDA expressions of the float "{v}" and the parameters "{0}", "{1}" (float literals or names).
  std::vector<std::string> cuda;
};

struct BinaryOp {
  std::string name;  // "add"
  std::vector<PythonForm> python;
  std::string cuda;           // of "{a}" (from x) and "{b}" (from y)
  bool positive_rhs = false;  // y is drawn in [0.5, 1.5) so that x / y stays finite and tame
};

// Where y of a binary op x (B, N) op y comes from: y (N,), y (B, 1) or y (B, N).
enum class Broadcast { kRow, kCol, kFull };
const char* broadcast_name(Broadcast broadcast);  // "row", "col", "full"
constexpr Broadcast kBroadcasts[] = {Broadcast::kRow, Broadcast::kCol, Broadcast::kFull};

const std::vector<UnaryOp>& unary_ops();
const std::vector<BinaryOp>& binary_ops();
const UnaryOp* find_unary(const std::string& name);

// "leaky_relu(negative_slope=0.2)": the held-out key of an op with one of its value sets.
std::string param_key(const UnaryOp& op, int value_index);
// "add[row]": the held-out key of a binary op with a broadcast.
std::string binary_key(const BinaryOp& op, Broadcast broadcast);

// An upper bound on |op(v)| given |v| <= magnitude, over every value set of the op: chains are
// built so that no intermediate value overflows float16 or makes exp explode.
double magnitude_after(const UnaryOp& op, double magnitude);
double magnitude_after(const BinaryOp& op, double magnitude);

// A Python float literal as a CUDA float literal: "0.05" -> "0.05f", "1e-05" -> "1e-05f".
std::string cuda_float(const std::string& python_literal);

}  // namespace dice::data
