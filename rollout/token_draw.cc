#include "rollout/token_draw.h"

#include <ATen/ATen.h>

#include <limits>

namespace dice {
namespace {

constexpr double kNegInf = -std::numeric_limits<double>::infinity();

// z with everything below the k-th largest value of each row set to -inf.
at::Tensor keep_top_k(const at::Tensor& z, int64_t k) {
  at::Tensor kth = std::get<0>(at::topk(z, k, /*dim=*/-1)).narrow(-1, k - 1, 1);
  return z.masked_fill(z < kth, kNegInf);
}

// z with the tail beyond probability mass top_p set to -inf (the token crossing it is kept).
at::Tensor keep_top_p(const at::Tensor& z, double top_p) {
  auto [sorted, order] = at::sort(z, /*stable=*/true, /*dim=*/-1, /*descending=*/true);
  at::Tensor probs = at::softmax(sorted, -1);
  at::Tensor mass_before = probs.cumsum(-1) - probs;
  at::Tensor filtered = sorted.masked_fill(mass_before >= top_p, kNegInf);
  return at::empty_like(z).scatter_(-1, order, filtered);
}

}  // namespace

TokenDraw draw_tokens(const at::Tensor& logits, const SamplingOptions& options,
                      int64_t banned_token, bool with_entropy, at::Generator& generator) {
  const bool greedy = options.temperature == 0.0;
  // A copy even when the logits are float32 already: it is modified in place below.
  at::Tensor z = logits.to(at::kFloat, /*non_blocking=*/false, /*copy=*/true);
  if (!greedy && options.temperature != 1.0) z.div_(options.temperature);
  if (banned_token >= 0) z.select(-1, banned_token).fill_(kNegInf);
  const int64_t vocab = z.size(-1);
  if (options.top_k > 0 && options.top_k < vocab) z = keep_top_k(z, options.top_k);
  if (options.top_p < 1.0) z = keep_top_p(z, options.top_p);
  // log p = z - logsumexp(z): one reduction instead of a materialised log_softmax, which only
  // the entropy needs.
  at::Tensor log_norm = at::logsumexp(z, -1, /*keepdim=*/true);

  TokenDraw draw;
  if (greedy) {
    draw.tokens = z.argmax(-1);
  } else {
    // Gumbel-max: argmax(z + G) with G = -log E, E ~ Exp(1), is a draw from softmax(z). E is
    // clamped away from 0 so that G stays finite: a token with z = -inf keeps -inf and never wins
    // (with E = 0 it would be -inf + inf = NaN).
    at::Tensor g = at::empty_like(z).exponential_(1.0, generator);
    draw.tokens = g.clamp_min_(1e-20).log_().neg_().add_(z).argmax(-1);
  }
  draw.log_probs = (z.gather(-1, draw.tokens.unsqueeze(-1)) - log_norm).squeeze(-1);
  draw.confidence = draw.log_probs.exp();
  if (with_entropy) {
    at::Tensor p = (z - log_norm).exp_();
    draw.entropy = -at::xlogy(p, p).sum(-1);  // xlogy(0, 0) = 0: filtered tokens add nothing
  }
  return draw;
}

}  // namespace dice
