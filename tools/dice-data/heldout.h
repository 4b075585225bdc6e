// The held-out split, reserved from the seed before anything is generated: level-1 (op,
// parameter value) and (binary op, broadcast) pairs, level-2 op combinations, level-3
// (normalisation, dtype) and (reduction, keepdim) pairs. No SFT or RL pair touches a reserved key
// (KernelPair::keys); every held-out pair is built on one, so held-out accuracy measures
// combinations the policy never saw.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "tools/dice-data/elementwise_family.h"
#include "tools/dice-data/op_table.h"
#include "tools/dice-data/row_family.h"

namespace dice::data {

struct HeldOutEntry {
  std::string level;  // "1", "2", "3"
  std::string kind;   // "param", "binary", "chain", "norm_dtype", "reduce_keepdim"
  std::string key;    // as in KernelPair::keys
};

struct HeldOut {
  std::vector<HeldOutEntry> entries;  // in reservation order (the manifest lists them)
  std::vector<std::pair<const UnaryOp*, int>> params;           // op, value index
  std::vector<std::pair<const BinaryOp*, Broadcast>> binaries;  // op, broadcast
  std::vector<ElementwiseTask> chains;                          // op combinations
  std::vector<RowTask> rows;  // norms with their dtype, reductions with their keepdim
  std::set<std::string> keys;

  bool reserved(const std::string& key) const { return keys.count(key) > 0; }
  // Whether any of `pair_keys` is reserved.
  bool touches(const std::vector<std::string>& pair_keys) const;
};

// Level 1: 2 parametrised ops with one value each, 1 (binary op, broadcast); level 2: 8 chains;
// level 3: 2 (normalisation, half dtype) and 2 (reduction, keepdim) pairs.
HeldOut reserve_heldout(std::uint64_t seed);

// The RL split (CurriculumOptions::rl_keys novel): keys of the same kinds, none of them held out,
// that SFT never sees and the RL tasks are built on. RL then trains where the SFT'd policy has to
// generalise, as on the held-out tasks; on SFT's own combinations a policy that memorised its
// corpus answers every sample of a group alike and the group teaches nothing (33 of 48 phase-1
// groups in the small recipe on the H200, 2026-12-02: docs/BENCHMARKS.md, "one layout, 12 SFT
// epochs"); measured, it did not help (8 of 96 groups mixed: docs/BENCHMARKS.md, "RL tasks on
// combinations of their own"). Level 1: 4 parameter values and 2 (binary op, broadcast) pairs;
// level 2: 8 chains; level 3: the 2 normalisations and 2 reductions the held-out split left.
HeldOut reserve_rl_keys(std::uint64_t seed, const HeldOut& heldout);

}  // namespace dice::data
