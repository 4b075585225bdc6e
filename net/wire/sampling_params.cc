#include "net/wire/sampling_params.h"

#include <cmath>
#include <string>

namespace dice::wire {

void fill_sampling_params(const SamplingOptions& s, schema::SamplingParams::Builder out) {
  out.setTemperature(static_cast<float>(s.temperature));
  out.setTopP(static_cast<float>(s.top_p));
  out.setTopK(static_cast<std::uint32_t>(s.top_k));
  out.setMaxNewTokens(static_cast<std::uint32_t>(s.max_new_tokens));
  out.setBlockSize(static_cast<std::uint32_t>(s.block_size));
  out.setDenoisingSteps(static_cast<std::uint32_t>(s.denoising_steps));
  out.setRemasking(s.remasking);
  out.setThreshold(static_cast<float>(s.threshold));
  auto stops = out.initStopTokenIds(static_cast<unsigned>(s.stop_token_ids.size()));
  for (unsigned i = 0; i < stops.size(); ++i) stops.set(i, s.stop_token_ids[i]);
}

Result<SamplingOptions> read_sampling_params(schema::SamplingParams::Reader in) {
  auto bad = [](const char* field, double value, const char* want) {
    return Status::invalid_argument("sampling." + std::string(field) + " = " +
                                    std::to_string(value) + ": " + want);
  };
  SamplingOptions s;
  s.temperature = in.getTemperature();
  s.top_p = in.getTopP();
  s.top_k = static_cast<int>(in.getTopK());
  s.max_new_tokens = static_cast<int>(in.getMaxNewTokens());
  s.block_size = static_cast<int>(in.getBlockSize());
  s.denoising_steps = static_cast<int>(in.getDenoisingSteps());
  s.remasking = in.getRemasking();
  s.threshold = in.getThreshold();
  s.stop_token_ids.clear();
  for (std::uint32_t id : in.getStopTokenIds()) s.stop_token_ids.push_back(id);
  if (!(s.temperature >= 0) || !std::isfinite(s.temperature)) {
    return bad("temperature", s.temperature, "must be 0 (greedy) or more");
  }
  if (!(s.top_p > 0 && s.top_p <= 1)) return bad("top_p", s.top_p, "must be in (0, 1]");
  if (s.max_new_tokens < 1) return bad("max_new_tokens", s.max_new_tokens, "must be at least 1");
  if (s.block_size < 1) return bad("block_size", s.block_size, "must be at least 1");
  if (s.denoising_steps < 1 || s.denoising_steps > s.block_size) {
    return bad("denoising_steps", s.denoising_steps, "must be in [1, block_size]");
  }
  if (!(s.threshold > 0)) return bad("threshold", s.threshold, "must be more than 0");
  return s;
}

}  // namespace dice::wire
