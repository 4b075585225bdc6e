// GradientReducer: sums a data-parallel rank's gradients with the other ranks', bucket by bucket
// (gradient_buckets.h), overlapped with the backward pass, as PyTorch's DDP reducer does:
//
//   reducer.zero();          // every parameter's .grad is a view into its bucket's flat buffer
//   forward; backward; ...   // micro-batches accumulate in place (not yet summed)
//   reducer.arm();           // before the last backward of the update
//   forward; backward        // a bucket is summed as soon as its last gradient lands
//   reducer.finish();        // the rest; afterwards .grad holds the sum over ranks
//
// Sums, never means: each rank scales its loss by the global normaliser (the whole batch's
// sample or token count), so the sum over ranks is exactly the gradient one process would get on
// the whole batch, whatever the shards' sizes (a rank with no samples contributes zeros).
// Buckets start in index order on every rank (a bucket that is ready waits for the ones before
// it), which is what a collective needs. A parameter that gets a gradient after its bucket
// started (used twice in one backward) fails finish() rather than sum a partial gradient.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "common/status.h"
#include "learner/parallel/gradient_buckets.h"
#include "learner/parallel/gradient_collective.h"

namespace dice {

class GradientReducer {
 public:
  // `params` in the model's order (the same on every rank); `collective` outlives the reducer.
  // InvalidArgument for parameters that do not require gradients or are not contiguous.
  static Result<std::unique_ptr<GradientReducer>> create(std::vector<at::Tensor> params,
                                                         GradientCollective* collective,
                                                         const BucketPlanOptions& options = {});
  ~GradientReducer();  // removes its hooks
  GradientReducer(const GradientReducer&) = delete;
  GradientReducer& operator=(const GradientReducer&) = delete;

  void zero();
  void arm();
  Status finish();

  std::size_t bucket_count() const;
  // Buckets of the last armed backward that were started during it (the overlap); kept until the
  // next arm(), so zero() after the step leaves it to be read.
  std::size_t started_in_backward() const;

 private:
  struct State;  // shared with the autograd hooks
  explicit GradientReducer(std::shared_ptr<State> state);
  std::shared_ptr<State> state_;
};

}  // namespace dice
