#include "tools/dice-data/curriculum_writer.h"

#include <algorithm>
#include <boost/json.hpp>
#include <filesystem>
#include <map>
#include <set>
#include <system_error>

#include "common/durable_file.h"
#include "common/json/pretty_json.h"

namespace dice::data {
namespace {

namespace json = boost::json;

json::array variants_json(const KernelPair& p) {
  json::array out;
  for (const auto& variant : p.shape_variants) {
    json::object o;
    for (const auto& [name, value] : variant) o[name] = value;
    out.push_back(std::move(o));
  }
  return out;
}

json::object sft_item(const SftItem& item) {
  const KernelPair& p = item.pair;
  json::object o;
  o["id"] = p.id;
  o["level"] = p.level;
  o["pytorch_code"] = p.pytorch_code;
  if (item.infill) {
    o["prefix"] = p.prefix;
    o["middle"] = p.middle;
    o["suffix"] = p.suffix;
  } else {
    o["cuda_code"] = p.cuda_code();
  }
  return o;
}

json::object infill_task(const KernelPair& p) {
  json::object o;
  o["id"] = p.id;
  o["level"] = p.level;
  o["op_key"] = p.op_key;
  o["pytorch_code"] = p.pytorch_code;
  o["prefix"] = p.prefix;
  o["suffix"] = p.suffix;
  o["middle"] = p.middle;
  o["cuda_code"] = p.cuda_code();
  o["shape_variants"] = variants_json(p);
  return o;
}

json::object e2e_task(const KernelPair& p) {
  json::object o;
  o["id"] = p.id;
  o["level"] = p.level;
  o["op_key"] = p.op_key;
  o["pytorch_code"] = p.pytorch_code;
  o["cuda_code"] = p.cuda_code();
  o["shape_variants"] = variants_json(p);
  return o;
}

json::object judge_item(const KernelPair& p) {
  json::object o;
  o["id"] = p.id;
  o["pytorch_code"] = p.pytorch_code;
  o["cuda_code"] = p.cuda_code();
  o["shape_variants"] = variants_json(p);
  return o;
}

json::object counts(const std::map<std::string, int>& m) {
  json::object o;
  for (const auto& [k, v] : m) o[k] = v;
  return o;
}

// Counts of one file's pairs by level, family, dtype and op.
json::object file_stats(const std::vector<const KernelPair*>& pairs) {
  std::map<std::string, int> levels, families, dtypes, ops;
  std::set<std::string> chain_keys, op_keys;
  for (const KernelPair* p : pairs) {
    op_keys.insert(p->op_key);
    ++levels[p->level];
    ++families[p->family];
    ++dtypes[p->dtype];
    // Chains are counted by length: their combinations are too many to list (chain_keys counts
    // the distinct ones).
    if (p->family == "chain") {
      const auto n = std::count(p->op.begin(), p->op.end(), '>') + 1;
      ++ops["chain:" + std::to_string(n) + " ops"];
      chain_keys.insert(p->op);
    } else {
      ++ops[p->family + ":" + p->op];
    }
  }
  json::object o;
  o["items"] = pairs.size();
  o["levels"] = counts(levels);
  o["families"] = counts(families);
  o["dtypes"] = counts(dtypes);
  o["ops"] = counts(ops);
  o["chain_combinations"] = chain_keys.size();
  o["op_keys"] = op_keys.size();  // distinct KernelPair::op_key: the clusters of a bootstrap
  return o;
}

json::object spread(std::vector<std::size_t> values) {
  json::object o;
  if (values.empty()) return o;
  std::sort(values.begin(), values.end());
  o["min"] = values.front();
  o["median"] = values[values.size() / 2];
  o["max"] = values.back();
  return o;
}

std::vector<const KernelPair*> pointers(const std::vector<KernelPair>& pairs) {
  std::vector<const KernelPair*> out;
  for (const auto& p : pairs) out.push_back(&p);
  return out;
}

}  // namespace

std::vector<std::pair<std::string, std::string>> curriculum_files(const Curriculum& c) {
  std::vector<std::pair<std::string, std::string>> files;
  json::object stats;

  json::array sft;
  std::vector<const KernelPair*> sft_pairs;
  int infill = 0;
  for (const auto& item : c.sft) {
    sft.push_back(sft_item(item));
    sft_pairs.push_back(&item.pair);
    infill += item.infill ? 1 : 0;
  }
  files.emplace_back("sft.json", pretty_json(sft));
  stats["sft.json"] = file_stats(sft_pairs);
  stats["sft.json"].as_object()["kinds"] =
      json::object{{"end_to_end", static_cast<int>(c.sft.size()) - infill}, {"infill", infill}};

  auto task_file = [&](const std::string& name, const std::vector<KernelPair>& pairs,
                       bool as_infill) {
    json::array a;
    for (const auto& p : pairs) a.push_back(as_infill ? infill_task(p) : e2e_task(p));
    files.emplace_back(name, pretty_json(a));
    stats[name] = file_stats(pointers(pairs));
  };
  task_file("rl_infill.json", c.rl_infill, true);
  task_file("rl_e2e.json", c.rl_e2e, false);
  task_file("heldout_infill.json", c.heldout_infill, true);
  task_file("heldout_e2e.json", c.heldout_e2e, false);
  task_file("heldout_indist_infill.json", c.heldout_indist_infill, true);
  task_file("heldout_indist_e2e.json", c.heldout_indist_e2e, false);

  // Every pair once, for dice-judge; ids are unique by construction, the set only guards it.
  json::array verify;
  std::vector<const KernelPair*> all = sft_pairs;
  for (const auto* list : {&c.rl_infill, &c.rl_e2e, &c.heldout_infill, &c.heldout_e2e,
                           &c.heldout_indist_infill, &c.heldout_indist_e2e})
    for (const auto& p : *list) all.push_back(&p);
  std::set<std::string> seen;
  std::vector<const KernelPair*> unique;
  std::vector<std::size_t> chars, lines;
  for (const KernelPair* p : all) {
    if (!seen.insert(p->id).second) continue;
    unique.push_back(p);
    verify.push_back(judge_item(*p));
    const std::string code = p->cuda_code();
    chars.push_back(code.size());
    lines.push_back(static_cast<std::size_t>(std::count(code.begin(), code.end(), '\n')) + 1);
  }
  files.emplace_back("verify_items.json", pretty_json(verify));
  stats["verify_items.json"] = file_stats(unique);
  for (const auto& [name, text] : files) stats[name].as_object()["bytes"] = text.size();

  json::object manifest;
  manifest["generator"] = kGeneratorVersion;
  manifest["seed"] = c.options.seed;
  manifest["options"] =
      json::object{{"sft_pairs", c.options.sft_pairs},
                   {"rl_tasks_per_level", c.options.rl_tasks_per_level},
                   {"heldout_per_level", c.options.heldout_per_level},
                   {"heldout_indist_per_level",
                    c.options.heldout_indist_per_level.value_or(c.options.heldout_per_level)},
                   {"names", c.options.names == Variety::kFixed ? "fixed" : "varied"},
                   {"layout", c.options.layout == Variety::kFixed ? "fixed" : "varied"},
                   {"rl_keys", c.options.rl_keys == RlKeys::kNovel ? "novel" : "seen"}};
  manifest["files"] = std::move(stats);
  auto entries = [](const HeldOut& split) {
    json::array a;
    for (const auto& e : split.entries)
      a.push_back(json::object{{"level", e.level}, {"kind", e.kind}, {"key", e.key}});
    return a;
  };
  manifest["heldout"] = entries(c.heldout);
  manifest["rl_keys"] = entries(c.rl_keys);
  manifest["cuda_code_chars"] = spread(chars);
  manifest["cuda_code_lines"] = spread(lines);
  files.emplace_back("MANIFEST.json", pretty_json(manifest));
  return files;
}

Status write_curriculum(const Curriculum& c, const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return Status::io_error(dir + ": cannot create the directory: " + ec.message());
  for (const auto& [name, text] : curriculum_files(c))
    DICE_RETURN_IF_ERROR(write_file_atomically((std::filesystem::path(dir) / name).string(), text));
  return Status::ok_status();
}

}  // namespace dice::data
