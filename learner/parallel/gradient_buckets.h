// Which parameters' gradients travel together in one all-reduce of data-parallel training
// (gradient_reducer.h). Backward produces gradients from the last layer to the first, so the
// parameters are taken in reverse order and cut into buckets of about `bucket_bytes`: a bucket
// is summed across ranks as soon as the backward has produced its last gradient, while the
// backward goes on with the layers before. The first bucket is smaller (`first_bucket_bytes`),
// so that communication starts early; a parameter larger than a bucket has one of its own.
// Parameters of different groups (dtype or device: one flat buffer holds one type) never share a
// bucket. For a sharded optimizer (optimizer_shard.h) each bucket's buffer is padded with zeros
// to a multiple of `chunks` elements, the world size, so that it cuts into equal chunks, one per
// rank: the reduce-scatter and all-gather of NCCL take equal chunks only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace dice {

struct BucketParam {
  std::int64_t numel = 0;
  std::int64_t element_bytes = 0;
  int group = 0;  // parameters of one group may share a bucket (same dtype and device)
};

struct GradientBucket {
  std::vector<std::size_t> params;    // indices into the parameter list, reverse order
  std::vector<std::int64_t> offsets;  // each one's first element in the bucket's flat buffer
  std::int64_t numel = 0;             // elements in the flat buffer, the padding included
  std::int64_t padding = 0;           // zeros after the last parameter (< chunks)
  int group = 0;
};

struct BucketPlanOptions {
  std::int64_t bucket_bytes = 25 << 20;  // PyTorch DDP's default
  std::int64_t first_bucket_bytes = 1 << 20;
  std::int64_t chunks = 1;  // every bucket's numel is a multiple of it (1: no padding)
};

// Buckets in the order a backward pass fills them; every parameter with numel > 0 is in exactly
// one. Deterministic: every rank of a run gets the same plan from the same model.
std::vector<GradientBucket> plan_gradient_buckets(const std::vector<BucketParam>& params,
                                                  const BucketPlanOptions& options = {});

}  // namespace dice
