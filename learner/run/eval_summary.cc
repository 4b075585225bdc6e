#include "learner/run/eval_summary.h"

#include <cstdio>

namespace dice {

std::string eval_summary(const eval::EvalTally& tally) {
  const int samples = tally.options().samples;
  auto cell_text = [samples](const std::string& name, const eval::TableCell& c) {
    char text[240];
    int n = std::snprintf(text, sizeof text, "%s: exec %.3f fast_1 %.3f fast_2 %.3f (%d tasks)",
                          name.c_str(), c.exec, c.fast_1, c.fast_2, c.problems);
    if (samples > 1 && n > 0 && static_cast<std::size_t>(n) < sizeof text) {
      std::snprintf(text + n, sizeof text - static_cast<std::size_t>(n),
                    " pass@1 %.3f +-%.3f (%d samples a task)", c.exec, c.exec_half_width, samples);
    }
    return std::string(text);
  };
  std::string out;
  for (const auto& [level, cell] : tally.levels()) {
    out += cell_text(level.empty() ? "no level" : "level " + level, cell) + " | ";
  }
  return out + cell_text("all", tally.all());
}

}  // namespace dice
