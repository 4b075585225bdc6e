#include "tools/dice-eval/progress.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace dice::eval {
namespace {

constexpr int kBarWidth = 20;

}  // namespace

std::string format_duration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "-";
  const long long s = std::llround(seconds);
  char text[48];
  if (s >= 3600) {
    std::snprintf(text, sizeof text, "%lldh%02lldm", s / 3600, (s % 3600) / 60);
  } else if (s >= 60) {
    std::snprintf(text, sizeof text, "%lldm%02llds", s / 60, s % 60);
  } else {
    std::snprintf(text, sizeof text, "%llds", s);
  }
  return text;
}

std::string progress_line(const Progress& p) {
  const int asked = std::max(p.asked_answers, 0);
  const int judged = std::max(p.judged_answers, 0);
  const double share = asked > 0 ? std::min(1.0, static_cast<double>(judged) / asked) : 1.0;
  const int filled = static_cast<int>(std::floor(share * kBarWidth));
  std::string bar = "[" + std::string(static_cast<std::size_t>(filled), '#') +
                    std::string(static_cast<std::size_t>(kBarWidth - filled), '-') + "]";
  // Problems done: those complete before, plus this attempt's whole groups so far.
  const int done = p.done_before + judged / std::max(p.samples, 1);
  const double per_minute = p.seconds > 0 ? judged * 60.0 / p.seconds : 0.0;
  const double eta = judged > 0 ? (asked - judged) / (judged / p.seconds) : -1;
  const bool full = p.reward_mode == "full";
  const std::string counted =
      full ? "correct" : "rewarded (" + p.reward_mode + ": not correctness)";
  const std::string eta_text = judged > 0 ? format_duration(eta) : "-";
  char text[512];
  std::snprintf(text, sizeof text,
                "%s %d/%d answers (%.0f%%) | %d/%d problems done | %d %s | %.1f answers/min | "
                "ETA %s | run %s",
                bar.c_str(), judged, asked, 100.0 * share, std::min(done, p.total_problems),
                p.total_problems, full ? p.correct : p.rewarded, counted.c_str(), per_minute,
                eta_text.c_str(), p.run_id.c_str());
  return text;
}

}  // namespace dice::eval
