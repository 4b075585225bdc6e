// Drawing one token at every position of a batch of blocks from the model's logits, on the
// device that holds the logits, in one batch of tensor ops (no host loop, no host sync).
//
// The sampling distribution of a position ("the policy"):
//   z = logits / T'             T' = temperature, or 1 when temperature is 0 (greedy)
//   z[banned] = -inf            the mask token is never drawn (a committed mask would stay masked)
//   z = top_k(z)                logits below the k-th largest set to -inf (0 = off); ties with
//                               the k-th value are kept
//   z = top_p(z)                in descending order, a token is kept while the probability mass
//                               of the tokens before it is < top_p (1 = off); the first is kept
//   p = softmax(z)
// token      = argmax(p) when temperature is 0 (first index on ties), else a draw from p
//              (Gumbel-max: argmax(z - log E), E ~ Exp(1) from the caller's generator)
// log_prob   = log p[token]            (the sampling log-prob a TraceRL trace records)
// confidence = p[token]                (what low-confidence remasking ranks)
// entropy    = -sum_v p_v log p_v      (what entropy-bounded remasking sums; only on request)
#pragma once

#include <ATen/core/Generator.h>
#include <ATen/core/Tensor.h>

#include <cstdint>

#include "options/rollout_options.h"

namespace dice {

struct TokenDraw {
  at::Tensor tokens;      // [..] int64
  at::Tensor log_probs;   // [..] float32
  at::Tensor confidence;  // [..] float32
  at::Tensor entropy;     // [..] float32; undefined unless asked for
};

// logits: [..., vocab] of any floating dtype; results have the leading shape [...].
// banned_token: a token id that is never drawn (the mask id), or -1 for none.
TokenDraw draw_tokens(const at::Tensor& logits, const SamplingOptions& options,
                      int64_t banned_token, bool with_entropy, at::Generator& generator);

}  // namespace dice
