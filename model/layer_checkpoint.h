// Activation checkpointing for training: a decoder layer run through checkpointed_layer() keeps
// only its input for the backward pass and runs the layer again there, so a training forward
// holds one hidden state per layer instead of every intermediate of attention and the MLP
// (what makes an SDAR-4B TraceRL forward over thousands of tokens fit next to the optimizer).
// The model has no dropout, so the second run computes exactly what the first did.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>

#include "model/layer_parameter_hooks.h"
#include "model/qwen3.h"

namespace dice {

// layer(x, ctx) with the recomputation above; ctx must not use a KV cache (training only).
// With `hooks` (sharded parameters, layer_parameter_hooks.h), the layer's weights are
// materialized around both runs: hooks->materialize(layer_index) before the forward,
// release_after_forward after it; materialize again before the recomputation and after_backward
// once the layer's backward has accumulated its gradients. The hooks must outlive the backward.
at::Tensor checkpointed_layer(Qwen3DecoderLayerImpl& layer, const at::Tensor& x,
                              const AttentionContext& ctx, LayerParameterHooks* hooks = nullptr,
                              int64_t layer_index = 0);

}  // namespace dice
