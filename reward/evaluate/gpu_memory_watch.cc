#include "reward/evaluate/gpu_memory_watch.h"

#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <exception>
#include <limits>
#include <string>

#include "common/process_tree.h"

namespace dice {
namespace {

// NVML's ABI, as far as it is used here: the version-1 entry points and structures, which every
// driver since keeps (later versions add fields; these never change).
using NvmlReturn = int;
using NvmlDevice = void*;
constexpr NvmlReturn kNvmlSuccess = 0;
constexpr NvmlReturn kNvmlInsufficientSize = 7;
struct NvmlProcessInfoV1 {
  unsigned int pid;
  unsigned long long used_gpu_memory;  // NOLINT(google-runtime-int): NVML's type
};
struct NvmlMemoryV1 {
  unsigned long long total, free, used;  // NOLINT(google-runtime-int): NVML's type
};
// What NVML reports for memory it cannot account per process (e.g. without the rights to).
constexpr unsigned long long kNvmlValueNotAvailable =  // NOLINT(google-runtime-int)
    std::numeric_limits<unsigned long long>::max();    // NOLINT(google-runtime-int)

class NvmlReader : public GpuMemoryReader {
 public:
  static Result<std::shared_ptr<GpuMemoryReader>> open() {
    void* lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (lib == nullptr) {
      const char* why = dlerror();
      return Status::unavailable(std::string("NVML: cannot load libnvidia-ml.so.1: ") +
                                 (why != nullptr ? why : "unknown"));
    }
    auto reader = std::shared_ptr<NvmlReader>(new NvmlReader());
    const bool found = bind(lib, "nvmlInit_v2", &reader->init_) &&
                       bind(lib, "nvmlErrorString", &reader->error_string_) &&
                       bind(lib, "nvmlDeviceGetHandleByIndex_v2", &reader->handle_by_index_) &&
                       bind(lib, "nvmlDeviceGetComputeRunningProcesses", &reader->processes_) &&
                       bind(lib, "nvmlDeviceGetMemoryInfo", &reader->memory_info_);
    if (!found) return Status::unavailable("NVML: libnvidia-ml.so.1 lacks an entry point");
    const NvmlReturn rc = reader->init_();
    if (rc != kNvmlSuccess) return Status::unavailable("NVML: nvmlInit: " + reader->why(rc));
    return std::shared_ptr<GpuMemoryReader>(reader);
  }

  Result<std::vector<std::pair<pid_t, std::uint64_t>>> process_memory(int ordinal) override {
    NvmlDevice device = nullptr;
    DICE_RETURN_IF_ERROR(device_at(ordinal, &device));
    std::vector<NvmlProcessInfoV1> infos(64);
    for (int attempt = 0; attempt < 4; ++attempt) {
      unsigned int count = static_cast<unsigned int>(infos.size());
      const NvmlReturn rc = processes_(device, &count, infos.data());
      if (rc == kNvmlInsufficientSize) {
        infos.resize(std::max<std::size_t>(count + 16, infos.size() * 2));
        continue;
      }
      if (rc != kNvmlSuccess) {
        return Status::unavailable("NVML: processes on GPU " + std::to_string(ordinal) + ": " +
                                   why(rc));
      }
      std::vector<std::pair<pid_t, std::uint64_t>> out;
      for (unsigned int i = 0; i < count; ++i) {
        if (infos[i].used_gpu_memory == kNvmlValueNotAvailable) {
          return Status::unavailable("NVML cannot say how much memory each process on GPU " +
                                     std::to_string(ordinal) + " holds");
        }
        out.emplace_back(static_cast<pid_t>(infos[i].pid), infos[i].used_gpu_memory);
      }
      return out;
    }
    return Status::unavailable("NVML: the process list of GPU " + std::to_string(ordinal) +
                               " kept growing");
  }

  Result<std::uint64_t> total_memory(int ordinal) override {
    NvmlDevice device = nullptr;
    DICE_RETURN_IF_ERROR(device_at(ordinal, &device));
    NvmlMemoryV1 memory{};
    const NvmlReturn rc = memory_info_(device, &memory);
    if (rc != kNvmlSuccess) return Status::unavailable("NVML: memory of GPU: " + why(rc));
    return static_cast<std::uint64_t>(memory.total);
  }

 private:
  NvmlReader() = default;

  template <typename Fn>
  static bool bind(void* lib, const char* name, Fn* fn) {
    *fn = reinterpret_cast<Fn>(dlsym(lib, name));
    return *fn != nullptr;
  }
  std::string why(NvmlReturn rc) const {
    const char* text = error_string_(rc);
    return text != nullptr ? text : "error " + std::to_string(rc);
  }
  Status device_at(int ordinal, NvmlDevice* device) const {
    if (ordinal < 0) return Status::invalid_argument("NVML: no GPU " + std::to_string(ordinal));
    const NvmlReturn rc = handle_by_index_(static_cast<unsigned int>(ordinal), device);
    if (rc != kNvmlSuccess) {
      return Status::unavailable("NVML: GPU " + std::to_string(ordinal) + ": " + why(rc));
    }
    return Status::ok_status();
  }

  NvmlReturn (*init_)() = nullptr;
  const char* (*error_string_)(NvmlReturn) = nullptr;
  NvmlReturn (*handle_by_index_)(unsigned int, NvmlDevice*) = nullptr;
  NvmlReturn (*processes_)(NvmlDevice, unsigned int*, NvmlProcessInfoV1*) = nullptr;
  NvmlReturn (*memory_info_)(NvmlDevice, NvmlMemoryV1*) = nullptr;
};

std::string mib(std::uint64_t bytes) {
  return std::to_string(bytes >> 20) + " MiB";
}

}  // namespace

Result<std::shared_ptr<GpuMemoryReader>> nvml_memory_reader() {
  // Loaded once: nvmlInit is costly and the library keeps one state per process.
  static const Result<std::shared_ptr<GpuMemoryReader>> kReader = NvmlReader::open();
  return kReader;
}

GpuMemoryWatch::GpuMemoryWatch(std::shared_ptr<GpuMemoryReader> reader, pid_t root,
                               const GpuMemoryWatchOptions& options, std::function<void()> on_over)
    : reader_(std::move(reader)), root_(root), options_(options), on_over_(std::move(on_over)) {
  thread_ = std::thread([this] { run(); });
}

GpuMemoryWatch::~GpuMemoryWatch() {
  stop();
}

void GpuMemoryWatch::stop() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  stop_signal_.notify_all();
  if (thread_.joinable()) thread_.join();
}

std::string GpuMemoryWatch::last_error() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return last_error_;
}

std::string GpuMemoryWatch::detail() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return detail_;
}

void GpuMemoryWatch::run() {
  const auto interval = std::chrono::duration<double>(std::max(0.001, options_.interval_seconds));
  std::unique_lock<std::mutex> lock(mutex_);
  while (!stopping_ && !over_.load()) {
    lock.unlock();
    // An exception out of this thread would end the whole reward worker (std::terminate): a
    // reading that throws (the driver's library, /proc of a process that just ended) is a
    // failed reading like any other.
    try {
      read_once();
    } catch (const std::exception& e) {
      fail_reading(std::string("the reading threw: ") + e.what());
    } catch (...) {
      fail_reading("the reading threw an exception that is not a std::exception");
    }
    lock.lock();
    stop_signal_.wait_for(lock, interval, [this] { return stopping_; });
  }
}

void GpuMemoryWatch::read_once() {
  auto memory = reader_->process_memory(options_.ordinal);
  if (!memory.ok()) return fail_reading(memory.status().message());
  const std::vector<pid_t> tree = process_tree(root_);
  std::uint64_t held = 0;
  bool listed = false;
  for (const auto& [pid, bytes] : *memory) {
    if (std::find(tree.begin(), tree.end(), pid) == tree.end()) continue;
    listed = true;
    held += bytes;
  }
  if (listed) saw_.store(true);
  if (held > peak_.load()) peak_.store(held);
  if (held <= options_.budget_bytes) return;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    detail_ = "held " + mib(held) + " of GPU memory, over its budget of " +
              mib(options_.budget_bytes) + " (read by the driver, NVML, outside its process)";
  }
  over_.store(true);
  if (on_over_) on_over_();
}

void GpuMemoryWatch::fail_reading(const std::string& why) {
  failed_.fetch_add(1);
  std::lock_guard<std::mutex> lock(mutex_);
  last_error_ = why;
}

std::uint64_t default_gpu_memory_budget(std::uint64_t total_bytes, int slots) {
  return total_bytes / static_cast<std::uint64_t>(2 * std::max(1, slots));
}

}  // namespace dice
