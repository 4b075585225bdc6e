#include "tools/dice-data/heldout.h"

#include "tools/dice-data/chain_builder.h"
#include "tools/dice-data/prng.h"

namespace dice::data {
namespace {

constexpr int kHeldParams = 2;
constexpr int kHeldBinaries = 1;
constexpr int kHeldChains = 8;
constexpr int kHeldNorms = 2;
constexpr int kHeldReductions = 2;

}  // namespace

bool HeldOut::touches(const std::vector<std::string>& pair_keys) const {
  for (const auto& k : pair_keys)
    if (reserved(k)) return true;
  return false;
}

HeldOut reserve_heldout(std::uint64_t seed) {
  Prng rng(item_seed(seed, "heldout", 0));
  HeldOut h;
  auto add = [&h](const std::string& level, const std::string& kind, const std::string& key) {
    h.entries.push_back({level, kind, key});
    h.keys.insert(key);
  };

  // Level 1: ops with parameters, each keeping all but one of its values for training.
  std::vector<const UnaryOp*> with_params;
  for (const auto& op : unary_ops())
    if (!op.params.empty() && op.values.size() > 2) with_params.push_back(&op);
  while (static_cast<int>(h.params.size()) < kHeldParams) {
    const UnaryOp* op = rng.pick(with_params);
    bool again = false;
    for (const auto& [o, v] : h.params) again = again || o == op;
    if (again) continue;
    const int value = rng.below(static_cast<int>(op->values.size()));
    h.params.emplace_back(op, value);
    add("1", "param", param_key(*op, value));
  }
  while (static_cast<int>(h.binaries.size()) < kHeldBinaries) {
    const BinaryOp* op = &rng.pick(binary_ops());
    const Broadcast b = kBroadcasts[rng.below(3)];
    h.binaries.emplace_back(op, b);
    add("1", "binary", binary_key(*op, b));
  }

  // Level 2: op combinations. A chain whose binary head is reserved above stays legal here: the
  // chain key alone makes it held-out.
  while (static_cast<int>(h.chains.size()) < kHeldChains) {
    ElementwiseTask chain = draw_chain_shape(rng);
    const std::string key = chain_key(chain);
    if (h.reserved(key)) continue;
    h.chains.push_back(chain);
    add("2", "chain", key);
  }

  // Level 3: normalisations in a half type (each keeps float32 and the other type for
  // training), reductions with one keepdim setting (each keeps the other).
  std::vector<int> norms_taken;
  while (static_cast<int>(norms_taken.size()) < kHeldNorms) {
    const int i = rng.below(4);
    bool again = false;
    for (int t : norms_taken) again = again || t == i;
    if (again) continue;
    norms_taken.push_back(i);
    RowTask t;
    t.op = kNorms[i];
    t.dtype = rng.chance(50) ? Dtype::kFloat16 : Dtype::kBFloat16;
    h.rows.push_back(t);
    add("3", "norm_dtype", norm_key(t.op, t.dtype));
  }
  std::vector<int> reductions_taken;
  while (static_cast<int>(reductions_taken.size()) < kHeldReductions) {
    const int i = rng.below(4);
    bool again = false;
    for (int t : reductions_taken) again = again || t == i;
    if (again) continue;
    reductions_taken.push_back(i);
    RowTask t;
    t.op = kReductions[i];
    t.keepdim = rng.chance(50);
    h.rows.push_back(t);
    add("3", "reduce_keepdim", reduce_key(t.op, t.keepdim));
  }
  return h;
}

}  // namespace dice::data
