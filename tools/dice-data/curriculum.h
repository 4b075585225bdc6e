// dice-data curriculum: the whole generated corpus, in memory. The SFT pairs, the RL tasks of both
// phases and the held-out split are drawn deterministically from one seed (prng.h), each item
// from a generator of its own, after the held-out keys are reserved (heldout.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tools/dice-data/code_style.h"
#include "tools/dice-data/heldout.h"
#include "tools/dice-data/kernel_pair.h"

namespace dice::data {

// Written to MANIFEST.json; bump it whenever the same seed would give different files.
inline constexpr char kGeneratorVersion[] = "dice-data curriculum 2";

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
  // Names in the CUDA candidates: drawn per pair, or fixed per label (code_style.h). Default:
  // varied
  Variety names = Variety::kVaried;
  // The candidates' layout and the families' other surface choices: drawn per pair, or one
  // (code_style.h). Default: varied
  Variety layout = Variety::kVaried;
  // The RL tasks' combinations: seen (SFT's own) or novel (reserved from SFT, as the held-out ones
  // are, but not held out). Default: seen (novel gave fewer mixed groups and a weaker SFT in the
  // small recipe: docs/BENCHMARKS.md, session 17)
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
};

Curriculum generate_curriculum(const CurriculumOptions& options);

}  // namespace dice::data
