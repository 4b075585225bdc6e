// GPU memory per evaluation, bounded from outside the candidate's process.
//
// Slots of one GPU run their evaluations side by side, and GPU memory is common: a candidate that
// takes it all fails its neighbours' allocations. A limit set inside the candidate's process (an
// allocator cap, PyTorch's memory fraction) is the candidate's to lift, and the driver API
// allocates around any allocator. So the evaluator watches each runner from here: the driver
// says, through NVML, how much device memory each process holds; the runner's whole process tree
// (it may fork) is summed every `interval`, and a tree over its budget is killed and judged
// resourceLimit. What NVML reports is the driver's own account (allocations, the context, CUDA
// graphs' and libraries' memory alike), outside anything candidate code can reach.
//
// A hoarder can hold more than its budget for up to one interval before it is killed; a
// neighbour's failure in that window is not undone here, but by judging it again alone
// (a_neighbour_can_cause, evaluator.h).
#pragma once

#include <sys/types.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "common/status.h"

namespace dice {

// Device memory per process on one GPU, as the driver accounts it.
class GpuMemoryReader {
 public:
  virtual ~GpuMemoryReader() = default;
  // (pid, bytes) of each process holding memory on host GPU `ordinal` (CUDA_VISIBLE_DEVICES
  // numbering in PCI bus order, which is also NVML's order). Pids as the host numbers them.
  virtual Result<std::vector<std::pair<pid_t, std::uint64_t>>> process_memory(int ordinal) = 0;
  // The GPU's memory, bytes.
  virtual Result<std::uint64_t> total_memory(int ordinal) = 0;
};

// NVML, loaded from libnvidia-ml.so.1 on first use (no build dependency: CPU builds and machines
// without the driver answer Unavailable, naming why). One reader for the process.
Result<std::shared_ptr<GpuMemoryReader>> nvml_memory_reader();

struct GpuMemoryWatchOptions {
  int ordinal = 0;                 // the host GPU the tree runs on
  std::uint64_t budget_bytes = 0;  // more than this in the tree: over budget
  double interval_seconds = 0.05;  // between two readings
};

// Watches the process tree of `root` (common/process_tree.h) on one GPU from construction until
// destruction, on a thread of its own. The first reading over budget calls `on_over` once (the
// evaluator kills the runner there) and is kept; readings stop then.
class GpuMemoryWatch {
 public:
  GpuMemoryWatch(std::shared_ptr<GpuMemoryReader> reader, pid_t root,
                 const GpuMemoryWatchOptions& options, std::function<void()> on_over);
  ~GpuMemoryWatch();
  GpuMemoryWatch(const GpuMemoryWatch&) = delete;
  GpuMemoryWatch& operator=(const GpuMemoryWatch&) = delete;

  // Stops the readings (idempotent); what was read stays.
  void stop();
  // Whether a reading found the tree over its budget.
  bool over_budget() const { return over_.load(); }
  // The most the tree held in one reading, bytes.
  std::uint64_t peak_bytes() const { return peak_.load(); }
  // Whether any reading listed a process of the tree: a runner holds a CUDA context from its
  // start, so a watch that never saw one is blind (NVML numbers pids in another namespace, or
  // cannot say per process) and bounds nothing.
  bool saw_the_tree() const { return saw_.load(); }
  // Readings that failed (NVML errors), and the last one's reason.
  int failed_readings() const { return failed_.load(); }
  std::string last_error() const;
  // "held N MiB of GPU memory, over its budget of M MiB" once over budget.
  std::string detail() const;

 private:
  void run();
  void read_once();
  void fail_reading(const std::string& why);  // counted, and kept as last_error()

  std::shared_ptr<GpuMemoryReader> reader_;
  const pid_t root_;
  const GpuMemoryWatchOptions options_;
  std::function<void()> on_over_;
  std::atomic<bool> over_{false}, saw_{false};
  std::atomic<std::uint64_t> peak_{0};
  std::atomic<int> failed_{0};
  mutable std::mutex mutex_;
  std::condition_variable stop_signal_;
  bool stopping_ = false;
  std::string last_error_, detail_;
  std::thread thread_;
};

// The budget of one evaluation on a GPU of `total_bytes` shared by `slots` slots: each slot's
// runner and judge, at most half of the slot's share each (the judge holds the reference's
// inputs and outputs, as large as the candidate's).
std::uint64_t default_gpu_memory_budget(std::uint64_t total_bytes, int slots);

}  // namespace dice
