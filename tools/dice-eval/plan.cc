#include "tools/dice-eval/plan.h"

#include <boost/json.hpp>
#include <cstdio>
#include <filesystem>
#include <map>
#include <sstream>

#include "common/durable_file.h"
#include "common/hash/content_hash.h"
#include "common/json/parse_text.h"
#include "common/json/pretty_json.h"
#include "common/read_file.h"

namespace dice::eval {
namespace fs = std::filesystem;
namespace json = boost::json;
namespace {

constexpr int kFileVersion = 1;

json::object settings_object(const EvalSettings& s) {
  json::array overrides(s.overrides.begin(), s.overrides.end());
  return {{"model", s.model},
          {"problems", s.problems},
          {"problems_hash", s.problems_hash},
          {"problem_count", s.problem_count},
          {"samples", s.samples},
          {"decoding", s.decoding},
          {"max_new_tokens", s.max_new_tokens},
          {"reward_mode", s.reward_mode},
          {"timing", s.timing},
          {"judging", s.judging},
          {"config", s.config},
          {"overrides", std::move(overrides)}};
}

Status make_dirs(const std::string& path) {
  std::error_code ec;
  fs::create_directories(path, ec);
  if (ec) return Status::io_error(path + ": cannot create the folder: " + ec.message());
  return Status::ok_status();
}

std::string three_digits(int n) {
  char text[16];
  std::snprintf(text, sizeof text, "%03d", n);
  return text;
}

std::string tasks_json(const std::vector<const Problem*>& problems) {
  json::array tasks;
  for (const Problem* p : problems) tasks.push_back(learner_task(*p));
  return pretty_json(tasks);
}

}  // namespace

std::string attempt_run_id(const std::string& evaluation_id, int attempt) {
  return evaluation_id + "-a" + std::to_string(attempt);
}

std::optional<int> attempt_of_run(const std::string& run_id, const std::string& evaluation_id) {
  const std::string prefix = evaluation_id + "-a";
  if (run_id.size() <= prefix.size() || run_id.compare(0, prefix.size(), prefix) != 0) {
    return std::nullopt;
  }
  const std::string digits = run_id.substr(prefix.size());
  if (digits.size() > 6 || digits[0] == '0' ||
      digits.find_first_not_of("0123456789") != std::string::npos) {
    return std::nullopt;
  }
  return std::stoi(digits);
}

std::string problems_hash(const std::vector<Problem>& problems) {
  std::vector<std::string> parts;
  for (const Problem& p : problems) {
    parts.insert(parts.end(), {p.id, kind_name(p.kind), p.level, p.pytorch_code, p.prefix, p.suffix,
                               json::serialize(p.shape_variants)});
  }
  std::vector<std::string_view> views(parts.begin(), parts.end());
  return content_hash_hex_parts(views);
}

std::string default_evaluation_id(const EvalSettings& settings) {
  return "eval-" + content_hash_hex(json::serialize(settings_object(settings))).substr(0, 12);
}

Status check_or_record_settings(const std::string& out_dir, const std::string& id,
                                const EvalSettings& settings) {
  const std::string path = (fs::path(out_dir) / "evaluation.json").string();
  const json::object wanted = settings_object(settings);
  std::error_code ec;
  if (!fs::exists(path, ec)) {
    DICE_RETURN_IF_ERROR(make_dirs(out_dir));
    json::object root{{"dice_eval", kFileVersion}, {"id", id}, {"settings", wanted}};
    return write_file_atomically(path, pretty_json(root));
  }
  DICE_ASSIGN_OR_RETURN(std::string text, read_file(path));
  boost::system::error_code error;
  std::string position;
  const json::value root = parse_json_text(text, &error, &position);
  const json::value* version =
      root.is_object() ? root.get_object().if_contains("dice_eval") : nullptr;
  const json::value* held_id = root.is_object() ? root.get_object().if_contains("id") : nullptr;
  const json::value* held = root.is_object() ? root.get_object().if_contains("settings") : nullptr;
  if (error || version == nullptr || held_id == nullptr || !held_id->is_string() ||
      held == nullptr || !held->is_object()) {
    return Status::corruption(path + ": not a dice-eval evaluation file; give another --out");
  }
  const std::string hint =
      ": to resume it, run dice-eval with the settings it was started with; for a new "
      "evaluation, give another --out";
  if (held_id->get_string() != id) {
    return Status::invalid_argument(path + ": the folder holds evaluation " +
                                    std::string(held_id->get_string()) + ", not " + id + hint);
  }
  for (const auto& [key, value] : wanted) {
    const json::value* there = held->get_object().if_contains(key);
    if (there == nullptr || *there != value) {
      return Status::invalid_argument(
          path + ": " + std::string(key) + " is " +
          (there == nullptr ? std::string("unset") : json::serialize(*there)).substr(0, 200) +
          " there, " + json::serialize(value).substr(0, 200) + " here" + hint);
    }
  }
  return Status::ok_status();
}

Result<std::vector<std::string>> write_task_files(const std::string& out_dir,
                                                  const std::vector<Problem>& problems) {
  const std::string dir = (fs::path(out_dir) / "tasks").string();
  DICE_RETURN_IF_ERROR(make_dirs(dir));
  std::map<std::string, std::vector<const Problem*>> by_kind;
  for (const Problem& p : problems) by_kind[kind_name(p.kind)].push_back(&p);
  std::vector<std::string> paths;
  for (const auto& [kind, list] : by_kind) {
    const std::string path = dir + "/" + kind + ".json";
    DICE_RETURN_IF_ERROR(write_file_atomically(path, tasks_json(list)));
    paths.push_back(path);
  }
  return paths;
}

std::string curriculum_yaml(const std::string& evaluation_id, int attempt,
                            const std::vector<std::pair<std::string, TaskKind>>& phases,
                            const AttemptOptions& options) {
  std::ostringstream out;
  out << "# Written by dice-eval: attempt " << attempt << " of evaluation " << evaluation_id
      << ". One eval phase per chunk\n"
         "# of the problems without complete verdicts in the reward log; each phase judges its\n"
         "# tasks once with the weights as they are (learner.update_policy false).\n"
         "scheduling: sequential_select\n"
         "phases:\n";
  for (const auto& [name, kind] : phases) {
    out << "  - name: " << name << "\n"
        << "    type: eval\n"
        << "    kind: " << kind_name(kind) << "\n"
        << "    task_files: [\"" << name << ".json\"]\n"
        << "    samples_per_task: " << options.samples << "\n"
        << "    decoding: " << options.decoding << "\n"
        << "    timing: " << (options.timing ? "true" : "false") << "\n";
  }
  return out.str();
}

Result<Attempt> write_attempt(const std::string& out_dir, const std::string& evaluation_id,
                              int number, const std::vector<const Problem*>& ask,
                              const AttemptOptions& options) {
  Attempt attempt;
  attempt.number = number;
  attempt.run_id = attempt_run_id(evaluation_id, number);
  attempt.dir = (fs::path(out_dir) / "attempts" / ("a" + std::to_string(number))).string();
  attempt.curriculum = attempt.dir + "/curriculum.yaml";
  attempt.problems = static_cast<int>(ask.size());
  DICE_RETURN_IF_ERROR(make_dirs(attempt.dir));
  std::vector<std::pair<std::string, TaskKind>> phases;
  std::map<TaskKind, int> chunks;  // chunks so far per kind
  std::vector<const Problem*> chunk;
  auto flush = [&]() -> Status {
    if (chunk.empty()) return Status::ok_status();
    const TaskKind kind = chunk.front()->kind;
    const std::string name = std::string(kind_name(kind)) + "-" + three_digits(++chunks[kind]);
    DICE_RETURN_IF_ERROR(
        write_file_atomically(attempt.dir + "/" + name + ".json", tasks_json(chunk)));
    phases.emplace_back(name, kind);
    attempt.phases.push_back(name);
    chunk.clear();
    return Status::ok_status();
  };
  const std::size_t size = static_cast<std::size_t>(std::max(options.chunk_size, 1));
  for (const Problem* problem : ask) {
    if (!chunk.empty() && (chunk.front()->kind != problem->kind || chunk.size() >= size)) {
      DICE_RETURN_IF_ERROR(flush());
    }
    chunk.push_back(problem);
  }
  DICE_RETURN_IF_ERROR(flush());
  DICE_RETURN_IF_ERROR(write_file_atomically(
      attempt.curriculum, curriculum_yaml(evaluation_id, number, phases, options)));
  return attempt;
}

}  // namespace dice::eval
