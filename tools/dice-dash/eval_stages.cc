#include "tools/dice-dash/eval_stages.h"

#include <cmath>
#include <map>
#include <sstream>

#include "net/wire/enum_name.h"

namespace dice::dash {
namespace {

namespace json = boost::json;

json::value word_or_null(const std::string& word) {
  return word.empty() ? json::value(nullptr) : json::value(json::string(word));
}

}  // namespace

std::string name_says(const std::string& phase_name, const std::vector<std::string>& words) {
  std::istringstream parts(phase_name);
  std::string part;
  while (std::getline(parts, part, '-')) {
    for (const std::string& word : words) {
      if (part == word) return word;
    }
  }
  return "";
}

json::array eval_stages(const std::vector<rewardlog::OwnedRecord<schema::StepRecord>>& steps,
                        const std::vector<rewardlog::OwnedRecord<schema::MetricRecord>>& metrics) {
  // metric name -> {step: value}, for the eval/ table of all tasks only.
  std::map<std::string, std::map<uint64_t, double>> table;
  for (const auto& record : metrics) {
    const auto m = record.get();
    const std::string name = m.getName().cStr();
    if (name.rfind("eval/", 0) == 0) table[name][m.getStep()] = m.getValue();
  }
  json::array out;
  std::string open_phase;  // phase name of out.back() while its steps continue
  for (const auto& record : steps) {
    const auto s = record.get();
    if (!s.getEvaluation()) {
      open_phase.clear();
      continue;
    }
    const std::string name =
        s.getPhaseName().size() ? s.getPhaseName().cStr() : wire::enum_name(s.getPhase());
    if (out.empty() || name != open_phase) {
      open_phase = name;
      out.push_back(
          json::object{{"phase", name},
                       {"first_step", s.getStep()},
                       {"policy_version", s.getPolicyVersion()},
                       {"split", word_or_null(name_says(name, {"pool", "indist", "ood"}))},
                       {"kind", word_or_null(name_says(name, {"infill", "e2e"}))}});
    }
    out.back().as_object()["last_step"] = s.getStep();
  }
  for (json::value& stage : out) {
    json::object& row = stage.as_object();
    const uint64_t first = row["first_step"].to_number<uint64_t>();
    const uint64_t last = row["last_step"].to_number<uint64_t>();
    for (const char* measure : {"tasks", "exec", "fast_1", "fast_2"}) {
      json::value value = nullptr;
      const auto series =
          table.find("eval/" + std::string(row["phase"].as_string()) + "/" + measure);
      if (series != table.end()) {
        // The learner writes the table at the phase's last step; the last point within the
        // phase's steps is this run of the phase's (a name met twice has a table each time).
        for (auto it = series->second.lower_bound(first);
             it != series->second.end() && it->first <= last; ++it) {
          if (std::isfinite(it->second)) value = it->second;
        }
      }
      row[measure] = value;
    }
  }
  return out;
}

}  // namespace dice::dash
