// A bench row's kernel profile, by the benches' `--kernels N` flag: begin() before the timed
// work, end() after it and a device synchronize, which returns the table (kernel_table.h, the N
// largest kernels). Off (N = 0) it costs nothing and returns "". In a build without CUPTI
// (DICE_HAVE_KERNEL_PROFILE unset) end() says so instead of a table.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "tools/bench/profile/kernel_table.h"
#ifdef DICE_HAVE_KERNEL_PROFILE
#include "tools/bench/profile/kernel_profile.h"
#endif

namespace dice::bench {

class KernelSpan {
 public:
  explicit KernelSpan(int top) : top_(top) {}

  void begin() {
#ifdef DICE_HAVE_KERNEL_PROFILE
    if (top_ <= 0) return;
    const Status started = KernelProfile::start();
    if (!started.ok()) error_ = started.to_string();
#endif
  }

  // wall_seconds: the timed work's wall time, the table's "kernels of wall" line.
  std::string end(double wall_seconds) {
    if (top_ <= 0) return "";
#ifdef DICE_HAVE_KERNEL_PROFILE
    if (!error_.empty()) return "  kernel profile: " + error_ + "\n";
    Result<std::vector<KernelTotal>> totals = KernelProfile::stop();
    if (!totals.ok()) return "  kernel profile: " + totals.status().to_string() + "\n";
    return kernel_table(std::move(*totals), wall_seconds, top_);
#else
    (void)wall_seconds;
    return "  kernel profile: this build has no CUPTI (cmake/DiceCupti.cmake)\n";
#endif
  }

 private:
  int top_ = 0;
  std::string error_;
};

}  // namespace dice::bench
