// Validation of sampler options and requests against the model, with messages that name the
// offending field and value.
#pragma once

#include "common/status.h"
#include "model/checkpoint/model_config.h"
#include "rollout/generation.h"

namespace dice {

// InvalidArgument naming the field ("sampler options: sampling.denoising_steps ...").
Status check_sampler_options(const SamplerOptions& options, const ModelConfig& model);

// InvalidArgument naming the request id and the problem (empty prompt, token out of range, too
// long for the cache).
Status check_request(const GenerationRequest& request, const SamplerOptions& options,
                     const ModelConfig& model);

}  // namespace dice
