// dice-data curriculum: the whole generated corpus, in memory. The SFT pairs, the RL tasks of both
// phases and the two held-out splits are drawn deterministically from one seed (prng.h), each item
// from a generator of its own, after the held-out keys are reserved (heldout.h). The held-out
// split proper (heldout_*) is out of distribution: op combinations and parameters no training
// pair has. The in-distribution one (heldout_indist_*) holds fresh instances of the RL tasks'
// own op keys (KernelPair::op_key): new sizes, names, layouts, and where the key leaves them
// free dtypes and a chain's constants; none is identical to a training pair.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tools/dice-data/code_style.h"
#include "tools/dice-data/heldout.h"
#include "tools/dice-data/kernel_pair.h"

namespace dice::data {

// Written to MANIFEST.json; bump it whenever the same seed would give different files.
inline constexpr char kGeneratorVersion[] = "dice-data curriculum 3";

// Which combinations the RL tasks are built on (heldout.h: reserve_rl_keys).
enum class RlKeys {
  kNovel,  // keys of their own, which SFT never sees
  kSeen,   // the combinations SFT trains on
};

struct CurriculumOptions {
  // Seed of every draw. Default: 1
  std::uint64_t seed = 1;
  // SFT pairs in sft.json, half end-to-end and half infilling, spread evenly over the levels.
  // Default: 3000
  int sft_pairs = 3000;
  // Tasks per level in each of rl_infill.json and rl_e2e.json. Default: 64
  int rl_tasks_per_level = 64;
  // Tasks per level in each of heldout_infill.json and heldout_e2e.json. Default: 32
  int heldout_per_level = 32;
  // Tasks per level in each of heldout_indist_infill.json and heldout_indist_e2e.json; unset =
  // heldout_per_level. Default: unset
  std::optional<int> heldout_indist_per_level;
  // Names in the CUDA candidates: drawn per pair, or fixed per label (code_style.h). Default:
  // varied
  Variety names = Variety::kVaried;
  // The candidates' layout and the families' other surface choices: drawn per pair, or one
  // (code_style.h). Default: varied
  Variety layout = Variety::kVaried;
  // The RL tasks' combinations: seen (SFT's own) or novel (reserved from SFT, as the held-out ones
  // are, but not held out). Default: seen (novel gave fewer mixed groups and a weaker SFT in the
  // small recipe on the H200, 2026-12-02: docs/BENCHMARKS.md, "RL tasks on combinations of their
  // own")
  RlKeys rl_keys = RlKeys::kSeen;
};

struct SftItem {
  bool infill = false;  // prefix/middle/suffix, else pytorch_code -> cuda_code
  KernelPair pair;
};

struct Curriculum {
  CurriculumOptions options;
  HeldOut heldout;
  HeldOut rl_keys;                                      // empty with RlKeys::kSeen
  std::vector<SftItem> sft;                             // end-to-end and infilling items alternate
  std::vector<KernelPair> rl_infill, rl_e2e;            // sorted by level
  std::vector<KernelPair> heldout_infill, heldout_e2e;  // sorted by level
  // Fresh instances of rl_infill's and rl_e2e's keys, sorted by level: task i of a level is one
  // of the level's RL task i (mod their count), drawn again.
  std::vector<KernelPair> heldout_indist_infill, heldout_indist_e2e;
};

Curriculum generate_curriculum(const CurriculumOptions& options);

}  // namespace dice::data
