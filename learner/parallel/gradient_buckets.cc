#include "learner/parallel/gradient_buckets.h"

#include <algorithm>
#include <map>

namespace dice {

std::vector<GradientBucket> plan_gradient_buckets(const std::vector<BucketParam>& params,
                                                  const BucketPlanOptions& options) {
  std::vector<GradientBucket> out;
  std::map<int, GradientBucket> open;  // per group, the bucket being filled
  std::map<int, std::int64_t> open_bytes;
  auto close = [&](int group) {
    auto it = open.find(group);
    if (it == open.end() || it->second.params.empty()) return;
    const std::int64_t chunks = std::max<std::int64_t>(options.chunks, 1);
    it->second.padding = (chunks - it->second.numel % chunks) % chunks;
    it->second.numel += it->second.padding;
    out.push_back(std::move(it->second));
    open.erase(it);
    open_bytes.erase(group);
  };
  // The cap of the bucket being filled: the plan's first bucket is the small one.
  auto cap = [&] { return out.empty() ? options.first_bucket_bytes : options.bucket_bytes; };
  for (std::size_t i = params.size(); i-- > 0;) {
    const BucketParam& p = params[i];
    if (p.numel <= 0) continue;
    const std::int64_t bytes = p.numel * p.element_bytes;
    if (open_bytes.count(p.group) && open_bytes[p.group] + bytes > cap()) close(p.group);
    GradientBucket& bucket = open[p.group];
    bucket.group = p.group;
    bucket.params.push_back(i);
    bucket.offsets.push_back(bucket.numel);
    bucket.numel += p.numel;
    open_bytes[p.group] += bytes;
    if (open_bytes[p.group] >= cap()) close(p.group);
  }
  while (!open.empty()) close(open.begin()->first);
  return out;
}

}  // namespace dice
