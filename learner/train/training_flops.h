// Model FLOPs of the learner's training forwards (docs/BENCHMARKS.md, "Learner: model FLOPs"), from
// the model's shape and the token layout the forward actually runs, for model FLOPs utilisation:
// MFU = model FLOPs / seconds / the GPU's peak. Recomputation (activation checkpointing) is not
// model FLOPs, as in the usual definition.
//
// A training row holds x_t and x_0, `length` tokens each (SDAR's layout, model/attention_masks.h):
//   linear   2 x params_per_token x 2 length          (q, k, v, o projections and the SwiGLU MLP
//                                                     of every layer; embeddings are lookups)
//   attention 4 x heads x head_dim x pairs per layer  (Q K^T and A V), pairs the mask allows:
//            x_0 block-causal and x_t's block i on x_0's blocks before it and itself, together
//            block^2 x n (n + 1) for n = ceil(length / block) blocks
//   lm_head  2 x hidden x vocab per scored position   (only scored positions reach it)
// Backward is twice the forward, so a trained forward counts 3x.
#pragma once

#include <cstdint>

#include "model/checkpoint/model_config.h"

namespace dice {

// Weights one token meets in the decoder layers (attention projections and MLP), all layers.
double decoder_params_per_token(const ModelConfig& config);

// FLOPs of one sequence of `length` tokens a half through the decoder (both halves), without
// lm_head. Sequences packed into one row do not see each other, so a row's FLOPs are its
// sequences' sum; padding is not counted (it is waste, which MFU should show).
double training_sequence_flops(const ModelConfig& config, std::int64_t length);

// FLOPs of `views` noisy views of one sequence of `length` tokens run beside one clean copy
// (Qwen3LM::hidden_training_views): the clean copy once, block-causal, and each view's half; with
// one view, training_sequence_flops(length).
double training_views_flops(const ModelConfig& config, std::int64_t length, std::int64_t views);

// lm_head's FLOPs for `scored` positions.
double lm_head_flops(const ModelConfig& config, std::int64_t scored);

// FLOPs of one forward over `rows` training rows of one `length`-token sequence a half,
// `scored` positions through lm_head in all.
double training_forward_flops(const ModelConfig& config, std::int64_t rows, std::int64_t length,
                              std::int64_t scored);

// The H200's (and H100's) dense bf16 peak from the datasheet, FLOP/s; REFERENCE.md also quotes
// ~790 TFLOP/s measured on the GPU node.
inline constexpr double kH200PeakBf16Flops = 989e12;

}  // namespace dice
