#include "rollout/sampler_checks.h"

#include <cmath>
#include <sstream>
#include <string>

namespace dice {
namespace {

template <typename... Parts>
Status invalid(const Parts&... parts) {
  std::ostringstream out;
  (out << ... << parts);
  return Status::invalid_argument(out.str());
}

}  // namespace

Status check_sampler_options(const SamplerOptions& o, const ModelConfig& model) {
  const SamplingOptions& s = o.sampling;
  const char* where = "sampler options: ";
  if (s.block_size != model.block_size) {
    return invalid(where, "sampling.block_size ", s.block_size, " differs from the model's ",
                   model.block_size, " (the attention mask is built with the model's)");
  }
  if (s.denoising_steps < 1 || s.denoising_steps > s.block_size) {
    return invalid(where, "sampling.denoising_steps must be in [1, block_size = ", s.block_size,
                   "] (each step commits at least one token), got ", s.denoising_steps);
  }
  if (!(s.temperature >= 0.0) || std::isinf(s.temperature)) {
    return invalid(where, "sampling.temperature must be >= 0 and finite, got ", s.temperature);
  }
  if (!(s.top_p > 0.0 && s.top_p <= 1.0)) {
    return invalid(where, "sampling.top_p must be in (0, 1], got ", s.top_p);
  }
  if (s.top_k < 0) return invalid(where, "sampling.top_k must be >= 0 (0 = off), got ", s.top_k);
  if (s.max_new_tokens < 1) {
    return invalid(where, "sampling.max_new_tokens must be >= 1, got ", s.max_new_tokens);
  }
  if (static_cast<int>(s.remasking) > static_cast<int>(Remasking::RANDOM)) {
    return invalid(where, "sampling.remasking ", static_cast<int>(s.remasking),
                   " is not a strategy this worker knows (from a newer learner?)");
  }
  if (!(s.threshold > 0.0) || std::isinf(s.threshold) ||
      (s.remasking == Remasking::LOW_CONFIDENCE_DYNAMIC && s.threshold > 1.0)) {
    return invalid(where,
                   "sampling.threshold must be in (0, 1] (a confidence) or > 0 (an entropy "
                   "bound), got ",
                   s.threshold);
  }
  for (uint32_t id : s.stop_token_ids) {
    if (static_cast<int64_t>(id) >= model.vocab_size) {
      return invalid(where, "sampling.stop_token_ids: ", id, " is outside the vocabulary (",
                     model.vocab_size, " tokens)");
    }
  }
  if (o.mask_token_id < 0 || o.mask_token_id >= model.vocab_size) {
    return invalid(where, "mask_token_id ", o.mask_token_id, " is outside the vocabulary (",
                   model.vocab_size, " tokens)");
  }
  if (o.max_batch < 1) return invalid(where, "max_batch must be >= 1, got ", o.max_batch);
  if (o.graph_key_slots < 1) {
    return invalid(where, "graph_key_slots must be >= 1, got ", o.graph_key_slots);
  }
  if (o.max_sequence_length < 3 * s.block_size) {
    return invalid(where, "max_sequence_length must be >= 3 x block_size = ", 3 * s.block_size,
                   ", got ", o.max_sequence_length);
  }
  if (o.max_prefill_tokens < 1) {
    return invalid(where, "max_prefill_tokens must be >= 1, got ", o.max_prefill_tokens);
  }
  return Status::ok_status();
}

Status check_request(const GenerationRequest& r, const SamplerOptions& o,
                     const ModelConfig& model) {
  const std::string where = "request " + std::to_string(r.id) + ": ";
  if (r.prompt.empty()) return invalid(where, "empty prompt");
  for (size_t i = 0; i < r.prompt.size(); ++i) {
    const int64_t id = r.prompt[i];
    if (id < 0 || id >= model.vocab_size || id == o.mask_token_id) {
      return invalid(where, "prompt token ", i, " is ", id,
                     id == o.mask_token_id ? " (the mask token)" : " (outside the vocabulary)");
    }
  }
  if (r.max_new_tokens < 0) {
    return invalid(where, "max_new_tokens must be >= 0 (0 = the sampler's), got ",
                   r.max_new_tokens);
  }
  if (r.stop_token_ids) {
    for (uint32_t id : *r.stop_token_ids) {
      if (static_cast<int64_t>(id) >= model.vocab_size) {
        return invalid(where, "stop token ", id, " is outside the vocabulary");
      }
    }
  }
  const int64_t max_new = r.max_new_tokens > 0 ? r.max_new_tokens : o.sampling.max_new_tokens;
  // The last forward of a sequence may hold a finished block and the next one past its tokens.
  const int64_t needed =
      static_cast<int64_t>(r.prompt.size()) + max_new + 2 * o.sampling.block_size;
  if (needed > o.max_sequence_length) {
    return invalid(where, "prompt (", r.prompt.size(), ") + max_new_tokens (", max_new,
                   ") + 2 x block_size needs ", needed, " cache slots; max_sequence_length is ",
                   o.max_sequence_length);
  }
  return Status::ok_status();
}

}  // namespace dice
