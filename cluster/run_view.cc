#include "cluster/run_view.h"

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <regex>

namespace dice::cluster {
namespace {

// The fields every line carries, which the view never repeats.
bool is_envelope_key(const std::string& key) {
  return key == "ts" || key == "level" || key == "run" || key == "component" || key == "at" ||
         key == "msg";
}

bool starts_with(const std::string& text, const std::string& prefix) {
  return text.compare(0, prefix.size(), prefix) == 0;
}

// "18:45:02" from ts=2026-12-06T18:45:02.123Z; "" when ts has another shape.
std::string clock_of(const LogfmtLine& line) {
  const std::string& ts = line.get("ts");
  const std::size_t t = ts.find('T');
  return t == std::string::npos || ts.size() < t + 9 ? "" : ts.substr(t + 1, 8);
}

// "42s", "3m05s", "2h07m" for a count of seconds as the learner logs it; the text itself when it
// is not a number ("-").
std::string duration_text(const std::string& seconds) {
  char* end = nullptr;
  const double value = std::strtod(seconds.c_str(), &end);
  if (seconds.empty() || *end != '\0' || !(value >= 0)) return seconds;
  const long s = static_cast<long>(value + 0.5);
  char text[32];
  if (s < 60) {
    std::snprintf(text, sizeof text, "%lds", s);
  } else if (s < 3600) {
    std::snprintf(text, sizeof text, "%ldm%02lds", s / 60, s % 60);
  } else {
    std::snprintf(text, sizeof text, "%ldh%02ldm", s / 3600, s % 3600 / 60);
  }
  return text;
}

// A warning or error as one line: its clock, level, message and fields.
std::string notice_text(const LogfmtLine& line) {
  std::string level = line.get("level");
  for (char& c : level) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  std::string text = clock_of(line);
  text += (text.empty() ? "" : " ") + level + " " + line.get("msg");
  for (const auto& field : line.fields) {
    if (!is_envelope_key(field.key)) text += " " + field.key + "=" + logfmt_quote(field.value);
  }
  return text;
}

// `text` padded on the left to `width` characters.
std::string right(const std::string& text, std::size_t width) {
  return text.size() >= width ? text : std::string(width - text.size(), ' ') + text;
}

// "k/N" and the phase from "step k/N of phase P"; false for another message.
bool parse_step_message(const std::string& msg, std::string* k_of_n, std::string* phase) {
  static const std::regex kStep(R"(^step (\d+/\d+) of phase (.+)$)");
  std::smatch m;
  if (!std::regex_match(msg, m, kStep)) return false;
  *k_of_n = m[1];
  *phase = m[2];
  return true;
}

// One cell of an evaluation summary (learner/run/eval_summary.h): "level 1: exec 0.250 fast_1 0.000
// fast_2 0.000 (4 tasks)", with " pass@1 0.250 +-0.100 (4 samples a task)" when tasks had
// several samples.
struct EvalRow {
  std::string level, exec, fast_1, fast_2, tasks, pass_at_1;
};

bool parse_eval_cell(const std::string& cell, EvalRow* row) {
  static const std::regex kCell(R"(^(.+): exec (\S+) fast_1 (\S+) fast_2 (\S+) \((\d+) tasks\))"
                                R"((?: pass@1 (\S+) \+-(\S+) \(\d+ samples a task\))?$)");
  std::smatch m;
  if (!std::regex_match(cell, m, kCell)) return false;
  const std::string label = m[1];
  row->level = label == "no level" ? "-" : starts_with(label, "level ") ? label.substr(6) : label;
  row->exec = m[2];
  row->fast_1 = m[3];
  row->fast_2 = m[4];
  row->tasks = m[5];
  if (m[6].matched) row->pass_at_1 = std::string(m[6]) + " +-" + std::string(m[7]);
  return true;
}

// The table of an evaluation summary; empty when a cell does not read as one.
std::vector<std::string> eval_table(const std::string& summary) {
  std::vector<EvalRow> rows;
  bool pass_at_1 = false;
  std::size_t from = 0;
  for (;;) {
    const std::size_t bar = summary.find(" | ", from);
    EvalRow row;
    if (!parse_eval_cell(summary.substr(from, bar - from), &row)) return {};
    pass_at_1 = pass_at_1 || !row.pass_at_1.empty();
    rows.push_back(std::move(row));
    if (bar == std::string::npos) break;
    from = bar + 3;
  }
  std::size_t level_width = 5;
  for (const auto& row : rows) level_width = std::max(level_width, row.level.size());
  auto line = [&](const EvalRow& r) {
    std::string text = "  " + r.level + std::string(level_width - r.level.size(), ' ') +
                       right(r.exec, 7) + right(r.fast_1, 8) + right(r.fast_2, 8) +
                       right(r.tasks, 7);
    if (pass_at_1) text += "  " + (r.pass_at_1.empty() ? "-" : r.pass_at_1);
    return text;
  };
  std::vector<std::string> table = {
      line({"level", "exec", "fast_1", "fast_2", "tasks", pass_at_1 ? "pass@1" : ""})};
  for (const auto& row : rows) table.push_back(line(row));
  return table;
}

// A row of an RL phase's step table, or its header.
std::string step_row(const std::string& step, const std::string& k_of_n, const std::string& reward,
                     const std::string& correct, const std::string& candidates,
                     const std::string& mixed, const std::string& loss, const std::string& kl,
                     const std::string& seconds) {
  return "  " + right(step, 5) + right(k_of_n, 7) + right(reward, 8) + right(correct, 9) +
         right(candidates, 7) + right(mixed, 7) + right(loss, 10) + right(kl, 10) +
         right(seconds, 7);
}

}  // namespace

void RunView::end_live(bool keep, ViewUpdate* update) {
  if (live_.empty()) return;
  if (keep) update->lines.push_back(live_);
  live_.clear();
  live_phase_.clear();
  update->live = "";
}

void RunView::set_live(const std::string& phase, const std::string& text, bool keep,
                       ViewUpdate* update) {
  if (phase != live_phase_) {
    end_live(keep_live_, update);
    keep_live_ = keep;
  }
  live_phase_ = phase;
  live_ = text;
  update->live = text;
}

void RunView::read_sft_start(const LogfmtLine& line, ViewUpdate* update) {
  end_live(keep_live_, update);  // a second SFT phase starts afresh
  set_live("SFT",
           "SFT  step 0/" + line.get("steps") + "  (" + line.get("samples") + " samples, epochs " +
               line.get("epochs") + ", batch " + line.get("batch_size") + ")",
           true, update);
}

void RunView::read_sft_step(const LogfmtLine& line, ViewUpdate* update) {
  const std::string& msg = line.get("msg");
  const std::string k_of_n = msg.substr(std::string("SFT step ").size());
  const std::size_t slash = k_of_n.find('/');
  std::string percent;
  if (slash != std::string::npos) {
    const long k = std::atol(k_of_n.substr(0, slash).c_str());
    const long n = std::atol(k_of_n.substr(slash + 1).c_str());
    if (n > 0) percent = " (" + std::to_string(100 * k / n) + "%)";
  }
  set_live("SFT",
           "SFT  step " + k_of_n + percent + "  epoch " + line.get("epoch") + "  loss " +
               line.get("loss") + "  " + line.get("tokens_per_s") + " tok/s  ETA " +
               duration_text(line.get("eta_s")),
           true, update);
}

void RunView::read_step(const LogfmtLine& line, ViewUpdate* update) {
  std::string k_of_n, phase;
  if (!parse_step_message(line.get("msg"), &k_of_n, &phase)) return;  // another "step ..." line
  const bool eval = starts_with(line.get("policy_update"), "none (eval phase)");
  if (phase != live_phase_) end_live(keep_live_, update);  // before this phase's first row
  if (!eval) {
    if (rows_phase_ != phase) {
      rows_phase_ = phase;
      update->lines.push_back("phase " + phase);
      update->lines.push_back(
          step_row("step", "k/N", "reward", "correct", "cands", "mixed", "loss", "kl", "secs"));
    }
    update->lines.push_back(step_row(line.get("step"), k_of_n, line.get("mean_reward"),
                                     line.get("correct_rate"), line.get("candidates"),
                                     line.get("groups_mixed") + "/" + line.get("groups_judged"),
                                     line.get("loss"), line.get("kl"), line.get("seconds")));
  }
  set_live(phase,
           phase + "  step " + k_of_n + "  reward " + line.get("mean_reward") + "  correct " +
               line.get("correct_rate") + "  " + line.get("candidates_per_s") +
               " candidates/s  run ETA " + duration_text(line.get("eta_s")),
           eval, update);
}

void RunView::read_evaluation(const LogfmtLine& line, ViewUpdate* update) {
  const std::string& msg = line.get("msg");
  const std::string head = "evaluation of phase ";
  const std::size_t colon = msg.find(": ", head.size());
  end_live(keep_live_, update);
  std::vector<std::string> table =
      colon == std::string::npos ? std::vector<std::string>{} : eval_table(msg.substr(colon + 2));
  if (table.empty()) {  // a summary of another shape: shown as it is
    update->lines.push_back(msg);
    return;
  }
  update->lines.push_back("evaluation of " + msg.substr(head.size(), colon - head.size()) +
                          " (policy v" + line.get("policy_version") + ", reward " +
                          line.get("reward_mode") + ")");
  update->lines.insert(update->lines.end(), table.begin(), table.end());
}

void RunView::read_other(const std::string& text, ViewUpdate* update) {
  // The supervisor's line before each start of the learner (cluster/supervisor.cc): the first
  // start is no news; a restart is, without the command line it repeats.
  const std::string start = "=== dice-cluster: ";
  const std::size_t restarts = text.find(" (restarts so far: ");
  if (starts_with(text, start) && restarts != std::string::npos) {
    if (text.compare(restarts, 21, " (restarts so far: 0)") == 0) return;
    const std::size_t command = text.find("): ", restarts);
    end_live(keep_live_, update);  // the phase starts again after a restart
    update->lines.push_back(
        text.substr(0, command == std::string::npos ? text.size() : command + 1));
    return;
  }
  update->lines.push_back(text);
}

ViewUpdate RunView::read(const std::string& log_line) {
  ViewUpdate update;
  const std::optional<LogfmtLine> parsed = parse_logfmt(log_line);
  if (!parsed || !parsed->has("level") || !parsed->has("msg")) {
    std::string text = log_line;
    while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
    if (!text.empty()) read_other(text, &update);
    return update;
  }
  const LogfmtLine& line = *parsed;
  const std::string& level = line.get("level");
  const std::string& msg = line.get("msg");
  if (level == "warn" || level == "error") {
    update.lines.push_back(notice_text(line));
  } else if (level != "info") {
    // debug lines stay in the log
  } else if (starts_with(msg, "SFT step ")) {
    read_sft_step(line, &update);
  } else if (msg == "SFT") {
    read_sft_start(line, &update);
  } else if (starts_with(msg, "step ") && line.has("policy_update")) {
    read_step(line, &update);
  } else if (starts_with(msg, "evaluation of phase ")) {
    read_evaluation(line, &update);
  } else if (msg == "sft phase done") {
    if (live_phase_ == "SFT") live_ += "  done in " + duration_text(line.get("seconds"));
    end_live(true, &update);
  } else if (starts_with(msg, "policy update: ")) {
    update.lines.push_back("run " + line.get("run") + ": " + line.get("phases") + " phases, " +
                           line.get("steps") + " steps; " + msg + "; reward " +
                           line.get("reward_mode"));
  } else if (msg == "run resumed") {
    update.lines.push_back("run resumed from " + line.get("from") + " at step " +
                           line.get("next_step") + " (policy v" + line.get("policy_version") + ")");
  } else if (starts_with(msg, "level promoted")) {
    update.lines.push_back("phase " + line.get("phase") + ": level " + line.get("level") +
                           " promoted after step " + line.get("after_step") +
                           "; the next level opens");
  } else if (starts_with(msg, "stop requested")) {
    update.lines.push_back(notice_text(line));
  } else if (msg == "learner done" || msg == "SFT done") {
    end_live(keep_live_, &update);
    update.lines.push_back(msg + ": " + line.get("steps") + " steps" +
                           (line.get("stopped") == "1" || line.get("stopped") == "true"
                                ? " (stopped before the end)"
                                : ""));
  }
  return update;
}

ViewUpdate RunView::finish() {
  ViewUpdate update;
  end_live(keep_live_, &update);
  return update;
}

}  // namespace dice::cluster
