#include "tools/dice-data/curriculum.h"

#include <map>
#include <set>
#include <stdexcept>
#include <variant>

#include "tools/dice-data/chain_builder.h"
#include "tools/dice-data/elementwise_family.h"
#include "tools/dice-data/row_family.h"

namespace dice::data {
namespace {

// What a task is built from before its surface (sizes, names, layout) is drawn.
using TaskSpec = std::variant<ElementwiseTask, RowTask>;

// How a split picks its tasks: SFT (and RL on seen keys) walks the families round-robin and
// avoids every reserved key; the held-out split and RL on novel keys walk their own reserved keys
// (`walk`), avoiding the keys of `avoid` wherever a task still draws (a chain's parameter values).
class TaskSource {
 public:
  TaskSource(const HeldOut* walk, const std::set<std::string>& avoid,
             const CurriculumOptions& options)
      : walk_(walk), avoid_(avoid), surface_{options.names, options.layout} {}

  // The next task of `level`, drawn from `rng`: `*spec` (when given) is what it is built from.
  KernelPair next(const std::string& level, Prng& rng, TaskSpec* spec = nullptr) {
    const int k = counters_[level]++;
    TaskSpec drawn;
    if (level == "1") {
      drawn = walk_ ? reserved_level1(k, rng) : level1(k, rng);
    } else if (level == "2") {
      drawn = walk_ ? reserved_chain(k, rng) : chain(rng);
    } else {
      drawn = walk_ ? reserved_level3(k, rng) : level3(k, rng);
    }
    if (spec) *spec = drawn;
    return render(drawn, rng);
  }

  // Another instance of `spec`'s op key (KernelPair::op_key): the dtype drawn again where the key
  // does not name it, a chain's constants (and whether they are constructor arguments) drawn
  // again, then sizes, names and layout from `rng`.
  KernelPair fresh(const TaskSpec& spec, Prng& rng) const {
    if (const auto* row = std::get_if<RowTask>(&spec)) {
      RowTask t = *row;
      if (is_reduction(t.op)) t.dtype = draw_dtype(rng, 40);
      return render(t, rng);
    }
    ElementwiseTask t = std::get<ElementwiseTask>(spec);
    if (t.family == "chain") return render(finish_chain(t, rng), rng);
    t.dtype = draw_dtype(rng, 30);
    for (auto& step : t.steps) step.init_arg = rng.chance(70);
    return render(t, rng);
  }

 private:
  static Dtype draw_dtype(Prng& rng, int half_percent) {
    if (!rng.chance(half_percent)) return Dtype::kFloat32;
    return rng.chance(50) ? Dtype::kFloat16 : Dtype::kBFloat16;
  }

  bool reserved(const std::string& key) const { return avoid_.count(key) > 0; }

  KernelPair render(const TaskSpec& spec, Prng& rng) const {
    if (const auto* row = std::get_if<RowTask>(&spec)) return render_row(*row, rng, surface_);
    return render_elementwise(std::get<ElementwiseTask>(spec), rng, surface_);
  }

  // A value set of `op` whose key is not avoided.
  int value_for(const UnaryOp& op, Prng& rng) const {
    for (;;) {
      const int v = rng.below(static_cast<int>(op.values.size()));
      if (!reserved(param_key(op, v))) return v;
    }
  }

  ElementwiseTask level1(int k, Prng& rng) {
    ElementwiseTask t;
    t.level = "1";
    t.dtype = draw_dtype(rng, 30);
    if (k % 3 != 2) {
      t.family = "unary";
      const UnaryOp& op = unary_ops()[static_cast<std::size_t>(unary_++) % unary_ops().size()];
      t.steps.push_back({&op, op.params.empty() ? 0 : value_for(op, rng), rng.chance(70)});
      return t;
    }
    t.family = "binary";
    std::vector<std::pair<const BinaryOp*, Broadcast>> open;
    for (const auto& op : binary_ops())
      for (Broadcast b : kBroadcasts)
        if (!reserved(binary_key(op, b))) open.emplace_back(&op, b);
    const auto& [op, b] = open[static_cast<std::size_t>(binary_++) % open.size()];
    t.binary = op;
    t.broadcast = b;
    return t;
  }

  ElementwiseTask reserved_level1(int k, Prng& rng) const {
    ElementwiseTask t;
    t.level = "1";
    t.dtype = draw_dtype(rng, 30);
    const std::size_t slots = walk_->params.size() + walk_->binaries.size();
    const std::size_t slot = static_cast<std::size_t>(k) % slots;
    if (slot < walk_->params.size()) {
      t.family = "unary";
      t.steps.push_back({walk_->params[slot].first, walk_->params[slot].second, rng.chance(70)});
    } else {
      t.family = "binary";
      t.binary = walk_->binaries[slot - walk_->params.size()].first;
      t.broadcast = walk_->binaries[slot - walk_->params.size()].second;
    }
    return t;
  }

  // Parameters, dtype and broadcast of a chain shape.
  ElementwiseTask finish_chain(ElementwiseTask t, Prng& rng) const {
    t.dtype = rng.chance(20) ? Dtype::kFloat16 : Dtype::kFloat32;
    for (auto& step : t.steps) {
      if (step.op->params.empty()) continue;
      step.value_index = value_for(*step.op, rng);
      step.init_arg = rng.chance(25);
    }
    return t;
  }

  ElementwiseTask chain(Prng& rng) const {
    for (;;) {
      ElementwiseTask t = draw_chain_shape(rng);
      if (reserved(chain_key(t))) continue;
      if (t.binary && reserved(binary_key(*t.binary, t.broadcast))) continue;
      return finish_chain(t, rng);
    }
  }

  ElementwiseTask reserved_chain(int k, Prng& rng) const {
    return finish_chain(walk_->chains[static_cast<std::size_t>(k) % walk_->chains.size()], rng);
  }

  RowTask level3(int k, Prng& rng) {
    RowTask t;
    if (k % 2 == 0) {
      std::vector<RowTask> open;
      for (RowOp op : kReductions)
        for (bool keepdim : {false, true})
          if (!reserved(reduce_key(op, keepdim))) open.push_back({op, keepdim});
      t = open[static_cast<std::size_t>(reduce_++) % open.size()];
      t.dtype = draw_dtype(rng, 40);
      return t;
    }
    t.op = kNorms[norm_++ % 4];
    do {
      t.dtype = draw_dtype(rng, 40);
    } while (reserved(norm_key(t.op, t.dtype)));
    return t;
  }

  // A reserved normalisation keeps its dtype (the key names it); a reserved reduction takes any.
  RowTask reserved_level3(int k, Prng& rng) const {
    RowTask t = walk_->rows[static_cast<std::size_t>(k) % walk_->rows.size()];
    if (is_reduction(t.op)) t.dtype = draw_dtype(rng, 40);
    return t;
  }

  const HeldOut* walk_;
  const std::set<std::string>& avoid_;
  SurfaceVariety surface_;
  std::map<std::string, int> counters_;  // tasks drawn so far per level
  int unary_ = 0, binary_ = 0, reduce_ = 0, norm_ = 0;
};

// `per_level` tasks of each level, in level order; `*specs` (when given) gets what each is built
// from, in the same order.
std::vector<KernelPair> by_level(const HeldOut* walk, const std::set<std::string>& avoid,
                                 const std::string& stream, int per_level,
                                 const CurriculumOptions& options,
                                 std::vector<TaskSpec>* specs = nullptr) {
  const std::uint64_t seed = options.seed;
  TaskSource source(walk, avoid, options);
  std::vector<KernelPair> out;
  std::uint64_t index = 0;
  for (const char* level : {"1", "2", "3"}) {
    for (int i = 0; i < per_level; ++i) {
      Prng rng(item_seed(seed, stream, index++));
      TaskSpec spec;
      out.push_back(source.next(level, rng, &spec));
      if (specs) specs->push_back(std::move(spec));
    }
  }
  return out;
}

// The in-distribution held-out tasks of one RL file: `per_level` per level, task i of a level a
// fresh instance of the level's RL task i (mod their count), so every RL key is asked about as
// evenly as the counts allow. An instance whose reference is that of a training pair
// (`training`: every SFT and RL reference) is drawn again from the next generator of its own: the
// split must ask what training never showed, even where names and layout are fixed and a small
// op leaves little else to vary. Sizes alone make a repeat rare (one of thousands).
std::vector<KernelPair> fresh_instances(const std::vector<TaskSpec>& specs,
                                        const std::vector<KernelPair>& rl,
                                        const std::set<std::string>& avoid,
                                        const std::set<std::string>& training,
                                        const std::string& stream, int per_level,
                                        const CurriculumOptions& options) {
  constexpr int kAttempts = 64;
  const TaskSource source(nullptr, avoid, options);
  std::vector<KernelPair> out;
  std::uint64_t index = 0;
  for (const char* level : {"1", "2", "3"}) {
    std::vector<std::size_t> of_level;
    for (std::size_t i = 0; i < rl.size(); ++i)
      if (rl[i].level == level) of_level.push_back(i);
    if (of_level.empty()) continue;
    for (int i = 0; i < per_level; ++i, ++index) {
      const TaskSpec& spec = specs[of_level[static_cast<std::size_t>(i) % of_level.size()]];
      for (int attempt = 0;; ++attempt) {
        if (attempt == kAttempts) {
          throw std::logic_error(
              "dice-data: no fresh instance of " +
              rl[of_level[static_cast<std::size_t>(i) % of_level.size()]].op_key + " in " +
              std::to_string(kAttempts) + " draws");
        }
        Prng rng(item_seed(options.seed, stream + "/" + std::to_string(attempt), index));
        KernelPair pair = source.fresh(spec, rng);
        if (training.count(pair.pytorch_code)) continue;
        out.push_back(std::move(pair));
        break;
      }
    }
  }
  return out;
}

// Ids in file order: "<family>-<level>-<n>", n counting per family and level over all files.
void assign_ids(Curriculum& c) {
  std::map<std::string, int> next;
  auto name = [&next](KernelPair& p) {
    const std::string stem = p.family + "-" + p.level;
    p.id = stem + "-" + std::to_string(next[stem]++);
  };
  for (auto& item : c.sft) name(item.pair);
  for (auto* list : {&c.rl_infill, &c.rl_e2e, &c.heldout_infill, &c.heldout_e2e,
                     &c.heldout_indist_infill, &c.heldout_indist_e2e})
    for (auto& p : *list) name(p);
}

}  // namespace

Curriculum generate_curriculum(const CurriculumOptions& options) {
  Curriculum c;
  c.options = options;
  c.heldout = reserve_heldout(options.seed);
  if (options.rl_keys == RlKeys::kNovel) c.rl_keys = reserve_rl_keys(options.seed, c.heldout);
  std::set<std::string> every_reserved = c.heldout.keys;
  every_reserved.insert(c.rl_keys.keys.begin(), c.rl_keys.keys.end());
  const std::set<std::string> none;
  {
    TaskSource source(nullptr, every_reserved, options);
    for (int i = 0; i < options.sft_pairs; ++i) {
      Prng rng(item_seed(options.seed, "sft", static_cast<std::uint64_t>(i)));
      const std::string level = std::to_string(1 + (i / 2) % 3);
      c.sft.push_back({i % 2 == 1, source.next(level, rng)});
    }
  }
  // RL on novel keys walks them; either way its tasks avoid the held-out keys (with seen keys
  // there are no others, so that is every reserved key).
  const HeldOut* rl_walk = options.rl_keys == RlKeys::kNovel ? &c.rl_keys : nullptr;
  const int rl_n = options.rl_tasks_per_level;
  std::vector<TaskSpec> infill_specs, e2e_specs;
  c.rl_infill = by_level(rl_walk, c.heldout.keys, "rl_infill", rl_n, options, &infill_specs);
  c.rl_e2e = by_level(rl_walk, c.heldout.keys, "rl_e2e", rl_n, options, &e2e_specs);
  const int held_n = options.heldout_per_level;
  c.heldout_infill = by_level(&c.heldout, none, "heldout_infill", held_n, options);
  c.heldout_e2e = by_level(&c.heldout, none, "heldout_e2e", held_n, options);
  std::set<std::string> training;
  for (const auto& item : c.sft) training.insert(item.pair.pytorch_code);
  for (const auto* list : {&c.rl_infill, &c.rl_e2e})
    for (const auto& p : *list) training.insert(p.pytorch_code);
  const int indist_n = options.heldout_indist_per_level.value_or(held_n);
  c.heldout_indist_infill = fresh_instances(infill_specs, c.rl_infill, c.heldout.keys, training,
                                            "heldout_indist_infill", indist_n, options);
  c.heldout_indist_e2e = fresh_instances(e2e_specs, c.rl_e2e, c.heldout.keys, training,
                                         "heldout_indist_e2e", indist_n, options);
  assign_ids(c);
  return c;
}

}  // namespace dice::data
