// The one conversion between how the YAML describes sampling (SamplingOptions,
// options/rollout_options.h: `rollout.sampling`) and how a RolloutRequest carries it
// (schema::SamplingParams): the learner fills a request's from its config, the rollout worker
// samples the request's group by what it reads back.
#pragma once

#include "common/status.h"
#include "options/rollout_options.h"
#include "schemas/rollout.capnp.h"

namespace dice::wire {

void fill_sampling_params(const SamplingOptions& sampling, schema::SamplingParams::Builder out);

// The request's sampling. InvalidArgument naming the field for values no sampler takes (a
// temperature below 0, top_p outside (0, 1], denoising steps outside [1, block size], a
// threshold of 0 or less); block_size and stop tokens are checked against the model by the
// sampler itself.
Result<SamplingOptions> read_sampling_params(schema::SamplingParams::Reader in);

}  // namespace dice::wire
