#include "tools/dice-data/chain_builder.h"

#include <vector>

#include "tools/dice-data/op_table.h"

namespace dice::data {
namespace {

constexpr double kInputMagnitude = 5.0;  // randn inputs of ~500k elements stay below this
constexpr double kMaxMagnitude = 2000.0;

bool used(const ElementwiseTask& task, const UnaryOp* op) {
  for (const auto& s : task.steps)
    if (s.op == op) return true;
  return false;
}

}  // namespace

ElementwiseTask draw_chain_shape(Prng& rng) {
  for (;;) {
    ElementwiseTask task;
    task.family = "chain";
    task.level = "2";
    double magnitude = kInputMagnitude;
    if (rng.chance(40)) {
      task.binary = &rng.pick(binary_ops());
      task.broadcast = kBroadcasts[rng.below(3)];
      magnitude = magnitude_after(*task.binary, magnitude);
    }
    const int unary_count = task.binary ? rng.between(1, 3) : rng.between(2, 4);
    bool ok = true;
    for (int i = 0; i < unary_count && ok; ++i) {
      const UnaryOp* op = nullptr;
      for (int attempt = 0; attempt < 50 && !op; ++attempt) {
        const UnaryOp* candidate = &rng.pick(unary_ops());
        if (used(task, candidate)) continue;
        // exp only of values |v| <= 5 (e^5 ~ 148), so neither float16 nor a later op overflows.
        if (candidate->name == "exp" && magnitude > kInputMagnitude) continue;
        if (magnitude_after(*candidate, magnitude) > kMaxMagnitude) continue;
        op = candidate;
      }
      if (!op) {
        ok = false;
        break;
      }
      magnitude = magnitude_after(*op, magnitude);
      task.steps.push_back({op, 0, false});
    }
    if (ok) return task;
  }
}

}  // namespace dice::data
