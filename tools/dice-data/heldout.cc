#include "tools/dice-data/heldout.h"

#include <algorithm>
#include <utility>

#include "tools/dice-data/chain_builder.h"
#include "tools/dice-data/prng.h"

namespace dice::data {
namespace {

// How many keys of each kind a split reserves.
struct SplitSize {
  int params, binaries, chains, norms, reductions;
};
constexpr SplitSize kHeldOutSize = {2, 1, 8, 2, 2};
// The RL split is twice the held-out one at level 1 (parameter values are the skill most held-out
// level-1 tasks test) and as large at levels 2 and 3, where SFT must keep the rest.
constexpr SplitSize kRlSize = {4, 2, 8, 2, 2};

// Reserves a split's keys. `taken` holds the keys of splits reserved before (none for the
// held-out split, which must stay as it was before the RL split existed): a key is never in two
// splits, and every op keeps enough of itself for SFT: two values of each parameterised op, one
// broadcast of each binary op, float32 and one half type of each normalisation, one keepdim
// setting of each reduction.
HeldOut reserve_split(Prng& rng, const SplitSize& n, const HeldOut& taken) {
  HeldOut h;
  auto add = [&h](const std::string& level, const std::string& kind, const std::string& key) {
    h.entries.push_back({level, kind, key});
    h.keys.insert(key);
  };
  auto reserved = [&](const std::string& key) { return h.reserved(key) || taken.reserved(key); };

  // Level 1: ops with parameters, each keeping at least two of its values for training.
  std::vector<const UnaryOp*> with_params;
  for (const auto& op : unary_ops())
    if (!op.params.empty() && op.values.size() > 2) with_params.push_back(&op);
  auto values_taken = [&taken](const UnaryOp* op) {
    return std::count_if(taken.params.begin(), taken.params.end(),
                         [op](const auto& p) { return p.first == op; });
  };
  while (static_cast<int>(h.params.size()) < n.params) {
    const UnaryOp* op = rng.pick(with_params);
    bool again = false;
    for (const auto& [o, v] : h.params) again = again || o == op;
    if (again) continue;
    const int value = rng.below(static_cast<int>(op->values.size()));
    const std::string key = param_key(*op, value);
    if (taken.reserved(key)) continue;
    if (static_cast<long>(op->values.size()) - values_taken(op) - 1 < 2) continue;
    h.params.emplace_back(op, value);
    add("1", "param", key);
  }
  auto broadcasts_taken = [&](const BinaryOp* op) {
    int count = 0;
    for (const auto* list : {&std::as_const(h.binaries), &taken.binaries})
      for (const auto& [o, b] : *list) count += o == op;
    return count;
  };
  while (static_cast<int>(h.binaries.size()) < n.binaries) {
    const BinaryOp* op = &rng.pick(binary_ops());
    const Broadcast b = kBroadcasts[rng.below(3)];
    if (reserved(binary_key(*op, b)) || broadcasts_taken(op) >= 2) continue;
    h.binaries.emplace_back(op, b);
    add("1", "binary", binary_key(*op, b));
  }

  // Level 2: op combinations. A held-out chain whose binary head is reserved at level 1 stays
  // legal: the chain key alone makes it held-out. A chain of a later split must not train on an
  // earlier split's binary key.
  while (static_cast<int>(h.chains.size()) < n.chains) {
    ElementwiseTask chain = draw_chain_shape(rng);
    const std::string key = chain_key(chain);
    if (reserved(key)) continue;
    if (chain.binary && taken.reserved(binary_key(*chain.binary, chain.broadcast))) continue;
    h.chains.push_back(chain);
    add("2", "chain", key);
  }

  // Level 3: normalisations in a half type, reductions with one keepdim setting; one key per op
  // over all splits, so each keeps float32 and the other half type, or the other keepdim.
  auto op_taken = [&](RowOp op) {
    for (const auto* rows : {&std::as_const(h.rows), &taken.rows})
      for (const RowTask& t : *rows)
        if (t.op == op) return true;
    return false;
  };
  int norms = 0;
  while (norms < n.norms) {
    const int i = rng.below(4);
    if (op_taken(kNorms[i])) continue;
    RowTask t;
    t.op = kNorms[i];
    t.dtype = rng.chance(50) ? Dtype::kFloat16 : Dtype::kBFloat16;
    h.rows.push_back(t);
    add("3", "norm_dtype", norm_key(t.op, t.dtype));
    ++norms;
  }
  int reductions = 0;
  while (reductions < n.reductions) {
    const int i = rng.below(4);
    if (op_taken(kReductions[i])) continue;
    RowTask t;
    t.op = kReductions[i];
    t.keepdim = rng.chance(50);
    h.rows.push_back(t);
    add("3", "reduce_keepdim", reduce_key(t.op, t.keepdim));
    ++reductions;
  }
  return h;
}

}  // namespace

bool HeldOut::touches(const std::vector<std::string>& pair_keys) const {
  for (const auto& k : pair_keys)
    if (reserved(k)) return true;
  return false;
}

HeldOut reserve_heldout(std::uint64_t seed) {
  Prng rng(item_seed(seed, "heldout", 0));
  return reserve_split(rng, kHeldOutSize, HeldOut{});
}

HeldOut reserve_rl_keys(std::uint64_t seed, const HeldOut& heldout) {
  Prng rng(item_seed(seed, "rl_keys", 0));
  return reserve_split(rng, kRlSize, heldout);
}

}  // namespace dice::data
