// Every kernel, copy and memset the process's GPUs ran between start() and stop(), totalled by
// name: where a bench's GPU time goes (issue 22's breakdown below forward/backward, issue 24's
// profile by kernel). CUPTI's activity API, which records on the GPU's own clock and adds no sync
// of its own; built where CMake found CUPTI (DICE_HAVE_CUPTI).
//
//   DICE_RETURN_IF_ERROR(KernelProfile::start());
//   ... the work, then a device synchronize ...
//   DICE_ASSIGN_OR_RETURN(std::vector<KernelTotal> totals, KernelProfile::stop());
//   std::puts(kernel_table(totals, wall_seconds, 10).c_str());
//
// One profile at a time in a process (CUPTI's activity buffers are process-wide); a second start()
// before stop() is an error, as is a torch profiler running meanwhile.
#pragma once

#include <vector>

#include "common/status.h"
#include "tools/bench/profile/kernel_table.h"

namespace dice::bench {

class KernelProfile {
 public:
  static Status start();
  // Flushes CUPTI's buffers and stops recording; the totals since start(), in no order.
  static Result<std::vector<KernelTotal>> stop();
};

}  // namespace dice::bench
