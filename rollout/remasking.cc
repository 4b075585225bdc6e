#include "rollout/remasking.h"

#include <ATen/ATen.h>
#include <c10/util/Exception.h>

#include <limits>

namespace dice {
namespace {

// rank[r, i] = place of position i when row r is sorted by key (stable: ties keep position
// order, so the leftmost position ranks first).
at::Tensor rank_by(const at::Tensor& key, bool descending) {
  at::Tensor order = std::get<1>(at::sort(key, /*stable=*/true, /*dim=*/1, descending));
  at::Tensor places = at::arange(key.size(1), order.options()).expand_as(order);
  return at::empty_like(order).scatter_(1, order, places);
}

// The q masked positions that sort first by key (descending or ascending), ties leftmost.
at::Tensor first_by(const at::Tensor& masked, const at::Tensor& key, const at::Tensor& q,
                    bool descending) {
  // Committed positions take the key that sorts last, after every mask.
  const double inf = std::numeric_limits<double>::infinity();
  at::Tensor rank =
      rank_by(key.masked_fill(masked.logical_not(), descending ? -inf : inf), descending);
  return masked & (rank < q.unsqueeze(1));
}

// The q masked positions of highest confidence.
at::Tensor top_confident(const at::Tensor& masked, const at::Tensor& confidence,
                         const at::Tensor& q) {
  return first_by(masked, confidence, q, /*descending=*/true);
}

}  // namespace

at::Tensor step_quota(const at::Tensor& start_masks, const at::Tensor& step, int64_t steps) {
  at::Tensor base = at::div(start_masks, steps, /*rounding_mode=*/"floor");
  at::Tensor extra = (step < at::remainder(start_masks, steps)).to(at::kLong);
  return base + extra;
}

at::Tensor select_commits(Remasking strategy, const at::Tensor& masked,
                          const at::Tensor& confidence, const at::Tensor& entropy,
                          const at::Tensor& quota, double threshold, at::Generator* generator) {
  at::Tensor left = masked.sum(1);  // int64
  at::Tensor q = at::minimum(at::clamp_min(quota, 1), left);
  switch (strategy) {
    case Remasking::LOW_CONFIDENCE_STATIC:
      return top_confident(masked, confidence, q);
    case Remasking::LOW_CONFIDENCE_DYNAMIC: {
      at::Tensor above = masked & (confidence >= threshold);
      at::Tensor enough = (above.sum(1) >= q).unsqueeze(1);
      return at::where(enough, above, top_confident(masked, confidence, q));
    }
    case Remasking::SEQUENTIAL:
      return masked & (masked.to(at::kLong).cumsum(1) <= q.unsqueeze(1));
    case Remasking::RANDOM: {
      TORCH_CHECK(generator != nullptr, "select_commits: random remasking needs a generator");
      // Independent uniform keys put the positions in a uniformly random order, drawn without
      // looking at the tokens: the q first masked ones are a uniform choice among the masks.
      at::Tensor key = at::empty(masked.sizes(), masked.options().dtype(at::kFloat))
                           .uniform_(0.0, 1.0, *generator);
      return first_by(masked, key, q, /*descending=*/false);
    }
    case Remasking::ENTROPY_BOUNDED: {
      const double inf = std::numeric_limits<double>::infinity();
      at::Tensor key = entropy.masked_fill(masked.logical_not(), inf);
      auto [sorted, order] = at::sort(key, /*stable=*/true, /*dim=*/1, /*descending=*/false);
      // Committed positions sort last with +inf, so the prefix sums below the bound cover masked
      // positions only.
      at::Tensor within = (sorted.cumsum(1) <= threshold).sum(1);
      at::Tensor n = at::maximum(within, q);
      at::Tensor places = at::arange(key.size(1), order.options()).expand_as(order);
      at::Tensor rank = at::empty_like(order).scatter_(1, order, places);
      return masked & (rank < n.unsqueeze(1));
    }
  }
  return at::zeros_like(masked);
}

}  // namespace dice
