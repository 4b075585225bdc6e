#include "tools/dice-eval/table_writers.h"

#include <boost/json.hpp>
#include <cstdio>
#include <sstream>

#include "common/json/pretty_json.h"

namespace dice::eval {
namespace json = boost::json;
namespace {

std::string number(double value, const char* format = "%.6g") {
  char text[64];
  std::snprintf(text, sizeof text, format, value);
  return text;
}

std::string percent(double fraction) {
  return number(100.0 * fraction, "%.1f");
}

// A CSV cell: quoted when it holds a comma, quote or line break (RFC 4180).
std::string csv_cell(const std::string& text) {
  if (text.find_first_of(",\"\r\n") == std::string::npos) return text;
  std::string out = "\"";
  for (char c : text) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

std::string noise_rule(double z) {
  if (z <= 0) return "fast_p counts a correct answer whose speedup > p (KernelBench's rule)";
  return "fast_p counts a correct answer whose speedup's one-sided lower confidence bound "
         "(z = " +
         number(z, "%.4g") +
         ", from the verdict's timed means, standard deviations and trials) exceeds p";
}

}  // namespace

std::string level_label(const std::string& level) {
  return level.empty() ? "none" : level;
}

std::string judging_rule(const TableMeta& meta) {
  return "Exec and fast_p are DICE's and KernelBench's evaluation: vendor libraries (cuBLAS, "
         "cuDNN, CUTLASS, CUB, ...) allowed beside the answer's own kernels "
         "(reward.libraries: allowed), atol = rtol = " +
         number(meta.tolerance, "%g") +
         "; the own-kernels columns count every answer that called a vendor library as not "
         "correct (reward.libraries: own_kernels_only, the RL reward's default)";
}

std::string reward_mode_warning(const std::string& reward_mode) {
  if (reward_mode == "full") return "";
  return "reward mode " + reward_mode +
         ": no GPU ran these answers, so NO number in this table means a correct kernel (" +
         (reward_mode == "compile_only" ? std::string("compile_only: the answer compiled")
                                        : std::string("extraction_only: its code block was "
                                                      "extracted and passed the static checks")) +
         "; correct, Exec and fast_p are 0 by construction)";
}

std::string table_json(const TableMeta& meta, const EvalTable& table) {
  json::object root;
  root["evaluation"] = meta.evaluation_id;
  root["model"] = meta.model;
  root["problem_set"] = {{"path", meta.problem_set}, {"form", meta.problem_form}};
  root["reward_mode"] = meta.reward_mode;
  root["correctness_judged"] = meta.reward_mode == "full";
  if (meta.reward_mode != "full") root["warning"] = reward_mode_warning(meta.reward_mode);
  root["decoding"] = meta.decoding;
  root["samples_per_problem"] = meta.samples;
  root["timing"] = meta.timing;
  root["noise_check"] = {{"z", meta.noise_z}, {"rule", noise_rule(meta.noise_z)}};
  root["judging"] = {
      {"libraries", "allowed"}, {"tolerance", meta.tolerance}, {"rule", judging_rule(meta)}};
  json::array runs(meta.runs.begin(), meta.runs.end());
  root["runs"] = std::move(runs);
  json::array checksums(meta.weights_checksums.begin(), meta.weights_checksums.end());
  root["weights_checksums"] = std::move(checksums);
  root["created"] = meta.created_utc;
  json::array rows;
  for (const TableRow& r : table.rows) {
    json::object row;
    row["kind"] = kind_name(r.kind);
    row["level"] = level_label(r.level);
    row["problems"] = r.problems;
    row["exec"] = r.exec;
    row["fast_0"] = r.fast_0;
    row["fast_1"] = r.fast_1;
    row["fast_2"] = r.fast_2;
    row["geo_mean_speedup"] = r.geo_mean_speedup;
    row["timed"] = r.timed;
    row["compiled"] = r.compiled;
    row["rewarded"] = r.rewarded;
    row["fast_1_raw"] = r.fast_1_raw;
    row["fast_2_raw"] = r.fast_2_raw;
    row["noise_rejected_1"] = r.noise_rejected_1;
    row["noise_rejected_2"] = r.noise_rejected_2;
    row["incomplete"] = r.incomplete;
    row["answers"] = r.answers;
    json::object pass;
    for (const auto& [k, value] : r.pass_at_k) pass[std::to_string(k)] = value;
    row["pass_at_k"] = std::move(pass);
    const TableCell& own = r.own_kernels_only;
    row["own_kernels_only"] = {{"exec", own.exec},
                               {"fast_0", own.fast_0},
                               {"fast_1", own.fast_1},
                               {"fast_2", own.fast_2},
                               {"geo_mean_speedup", own.geo_mean_speedup},
                               {"timed", own.timed}};
    rows.push_back(std::move(row));
  }
  root["rows"] = std::move(rows);
  return pretty_json(root);
}

std::string table_csv(const TableMeta& meta, const EvalTable& table) {
  std::ostringstream out;
  out << "kind,level,problems,exec,fast_0,fast_1,fast_2,geo_mean_speedup,timed,compiled,"
         "rewarded,fast_1_raw,fast_2_raw,noise_rejected_1,noise_rejected_2,incomplete,answers";
  for (int k : meta.pass_k) out << ",pass_at_" << k;
  out << ",reward_mode,own_kernels_exec,own_kernels_fast_1,own_kernels_fast_2,"
         "own_kernels_geo_mean_speedup,own_kernels_timed\r\n";
  for (const TableRow& r : table.rows) {
    out << kind_name(r.kind) << ',' << csv_cell(level_label(r.level)) << ',' << r.problems << ','
        << number(r.exec) << ',' << number(r.fast_0) << ',' << number(r.fast_1) << ','
        << number(r.fast_2) << ',' << number(r.geo_mean_speedup) << ',' << r.timed << ','
        << number(r.compiled) << ',' << number(r.rewarded) << ',' << number(r.fast_1_raw) << ','
        << number(r.fast_2_raw) << ',' << r.noise_rejected_1 << ',' << r.noise_rejected_2 << ','
        << r.incomplete << ',' << r.answers;
    for (int k : meta.pass_k) {
      auto found = r.pass_at_k.find(k);
      out << ',' << number(found == r.pass_at_k.end() ? 0.0 : found->second);
    }
    const TableCell& own = r.own_kernels_only;
    out << ',' << csv_cell(meta.reward_mode) << ',' << number(own.exec) << ',' << number(own.fast_1)
        << ',' << number(own.fast_2) << ',' << number(own.geo_mean_speedup) << ',' << own.timed
        << "\r\n";
  }
  return out.str();
}

std::string table_markdown(const TableMeta& meta, const EvalTable& table) {
  std::ostringstream out;
  out << "# dice-eval " << meta.evaluation_id << "\n\n"
      << "- model: `" << meta.model << "`\n"
      << "- problems: `" << meta.problem_set << "` (" << meta.problem_form << ")\n"
      << "- decoding: " << meta.decoding << "; " << meta.samples << " answer"
      << (meta.samples == 1 ? "" : "s") << " per problem\n"
      << "- reward mode: " << meta.reward_mode << "; timing "
      << (meta.timing ? "on" : "off (fast_1 and fast_2 are 0 by construction)") << "\n";
  if (!meta.runs.empty()) {
    out << "- reward log runs:";
    for (const std::string& run : meta.runs) out << " `" << run << "`";
    out << "\n";
  }
  out << "\n";
  if (meta.reward_mode != "full") {
    out << "> **NOT A MEASURE OF CORRECT KERNELS.** " << reward_mode_warning(meta.reward_mode)
        << ".\n\n";
  }
  out << "| kind | level | problems | Exec % | fast_0 % | fast_1 % | fast_2 % | geo-mean speedup |";
  for (int k : meta.pass_k) out << " pass@" << k << " % |";
  const bool full = meta.reward_mode == "full";
  out << " compiled % |" << (full ? "" : " rewarded % (" + meta.reward_mode + ") |")
      << " own kernels Exec % | own kernels fast_1 % | own kernels fast_2 % |"
      << "\n|---|---|---|---|---|---|---|---|";
  for (std::size_t i = 0; i < meta.pass_k.size() + (full ? 4 : 5); ++i) out << "---|";
  out << "\n";
  int incomplete = 0, rejected = 0;
  for (const TableRow& r : table.rows) {
    const bool total = r.level == kAllLevels;
    const std::string b = total ? "**" : "";
    out << "| " << kind_name(r.kind) << " | " << b << level_label(r.level) << b << " | "
        << r.problems << " | " << b << percent(r.exec) << b << " | " << percent(r.fast_0) << " | "
        << percent(r.fast_1) << " | " << percent(r.fast_2) << " | "
        << (r.timed > 0 ? number(r.geo_mean_speedup, "%.2f") + "x (" + std::to_string(r.timed) + ")"
                        : std::string("-"))
        << " |";
    for (int k : meta.pass_k) {
      auto found = r.pass_at_k.find(k);
      out << " " << percent(found == r.pass_at_k.end() ? 0.0 : found->second) << " |";
    }
    const TableCell& own = r.own_kernels_only;
    out << " " << percent(r.compiled) << " |" << (full ? "" : " " + percent(r.rewarded) + " |")
        << " " << b << percent(own.exec) << b << " | " << percent(own.fast_1) << " | "
        << percent(own.fast_2) << " |\n";
    if (!total) {
      incomplete += r.incomplete;
      rejected += r.noise_rejected_1 + r.noise_rejected_2;
    }
  }
  out << "\nEach rate is over ALL problems of its row (KernelBench's fast_p); Exec = fast_0 = "
         "correct. "
      << noise_rule(meta.noise_z)
      << ". The geo-mean speedup is over the correct, timed answers (their count in "
         "brackets). "
      << judging_rule(meta) << ".\n";
  if (rejected > 0) {
    out << "The noise check turned down " << rejected
        << " answer speedup(s) that KernelBench's plain rule would count (table.json: "
           "fast_p_raw, noise_rejected_p).\n";
  }
  if (incomplete > 0) {
    out << "**" << incomplete
        << " problem(s) lack a verdict for some answer** (lost or timed out): counted as not "
           "correct.\n";
  }
  if (meta.weights_checksums.size() > 1) {
    out << "**The answers were sampled by " << meta.weights_checksums.size()
        << " different weights** (checksums in table.json): the model changed between runs.\n";
  }
  return out.str();
}

}  // namespace dice::eval
