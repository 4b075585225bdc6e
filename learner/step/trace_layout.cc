#include "learner/step/trace_layout.h"

#include <cmath>
#include <string>

namespace dice {
namespace {

Status check_steps(const std::vector<std::int32_t>& steps, int denoising_steps, const char* what) {
  for (std::size_t i = 0; i < steps.size(); ++i) {
    if (steps[i] < 0 || steps[i] >= denoising_steps) {
      return Status::invalid_argument("trace_layout: " + std::string(what) + " token " +
                                      std::to_string(i) + " has unmask step " +
                                      std::to_string(steps[i]) + ", outside [0, " +
                                      std::to_string(denoising_steps) + ")");
    }
  }
  return Status::ok_status();
}

}  // namespace

Result<TraceLayout> trace_layout(const TraceSample& sample, const TraceLayoutOptions& options) {
  if (options.block_size < 1 || options.denoising_steps < 1 || options.shrink < 1) {
    return Status::invalid_argument(
        "trace_layout: block_size, denoising_steps and shrink must be positive");
  }
  const std::size_t n = sample.response.size();
  if (sample.unmask_steps.size() != n || sample.old_log_probs.size() != n) {
    return Status::invalid_argument("trace_layout: " + std::to_string(n) + " response tokens but " +
                                    std::to_string(sample.unmask_steps.size()) +
                                    " unmask steps and " +
                                    std::to_string(sample.old_log_probs.size()) + " log-probs");
  }
  if (!sample.importance.empty() && sample.importance.size() != n) {
    return Status::invalid_argument("trace_layout: " + std::to_string(n) + " response tokens but " +
                                    std::to_string(sample.importance.size()) +
                                    " importance weights");
  }
  if (sample.tail_unmask_steps.size() != sample.tail.size()) {
    return Status::invalid_argument(
        "trace_layout: " + std::to_string(sample.tail.size()) + " tail tokens but " +
        std::to_string(sample.tail_unmask_steps.size()) + " tail unmask steps");
  }
  if (!(sample.temperature >= 0) || !std::isfinite(sample.temperature)) {
    return Status::invalid_argument("trace_layout: sampling temperature " +
                                    std::to_string(sample.temperature) +
                                    " is not a finite number >= 0");
  }
  DICE_RETURN_IF_ERROR(check_steps(sample.unmask_steps, options.denoising_steps, "response"));
  DICE_RETURN_IF_ERROR(check_steps(sample.tail_unmask_steps, options.denoising_steps, "tail"));

  const auto prompt_len = static_cast<std::int64_t>(sample.prompt.size());
  const std::int64_t response_end = prompt_len + static_cast<std::int64_t>(n);
  const std::int64_t used = response_end + static_cast<std::int64_t>(sample.tail.size());
  const std::int64_t block = options.block_size;
  const std::int64_t length = (used + block - 1) / block * block;
  if (!sample.tail.empty() &&
      (response_end == 0 || (response_end - 1) / block != (used - 1) / block)) {
    return Status::invalid_argument("trace_layout: the tail of " +
                                    std::to_string(sample.tail.size()) +
                                    " tokens reaches past the final block");
  }

  // Per position: its token and its step (-1: prompt, always shown; steps >= denoising_steps
  // never occur; padding is masked in every view).
  TraceLayout layout;
  layout.prompt_length = prompt_len;
  layout.response_length = static_cast<std::int64_t>(n);
  layout.temperature = sample.temperature > 0 ? sample.temperature : 1.0;
  layout.clean.assign(static_cast<std::size_t>(length), options.mask_token_id);
  std::vector<std::int32_t> step_at(static_cast<std::size_t>(used), -1);
  for (std::int64_t i = 0; i < used; ++i) {
    const auto at = static_cast<std::size_t>(i);
    std::int64_t token;
    if (i < prompt_len) {
      token = sample.prompt[at];
    } else if (i < response_end) {
      token = sample.response[at - sample.prompt.size()];
      step_at[at] = sample.unmask_steps[at - sample.prompt.size()];
    } else {
      const auto t = static_cast<std::size_t>(i - response_end);
      token = sample.tail[t];
      step_at[at] = sample.tail_unmask_steps[t];
    }
    if (token == options.mask_token_id) {
      const char* part = i < prompt_len ? "prompt" : i < response_end ? "response" : "tail";
      return Status::invalid_argument("trace_layout: the " + std::string(part) +
                                      " holds the mask token at position " + std::to_string(i));
    }
    layout.clean[at] = token;
  }

  for (int k = 0; k < options.denoising_steps; k += options.shrink) {
    TraceView view;
    view.first_step = k;
    view.noisy = layout.clean;
    for (std::int64_t i = prompt_len; i < used; ++i) {
      const auto at = static_cast<std::size_t>(i);
      const std::int32_t step = step_at[at];
      if (step >= k) view.noisy[at] = options.mask_token_id;
      if (i < response_end && step >= k && step < k + options.shrink) {
        const std::size_t r = at - sample.prompt.size();
        view.positions.push_back(i);
        view.targets.push_back(sample.response[r]);
        view.old_log_probs.push_back(sample.old_log_probs[r]);
        view.importance.push_back(sample.importance.empty() ? 1.0f : sample.importance[r]);
      }
    }
    if (!view.positions.empty()) layout.views.push_back(std::move(view));
  }
  return layout;
}

}  // namespace dice
