#include "tools/bench/profile/kernel_profile.h"

#include <cupti.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <mutex>
#include <string>

#if CUPTI_API_VERSION < 130000
#error "kernel_profile.cc reads CUDA 13's activity records (CUpti_ActivityKernel10)"
#endif

namespace dice::bench {
namespace {

constexpr std::size_t kBufferBytes = 8 << 20;
constexpr CUpti_ActivityKind kKinds[] = {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL,
                                         CUPTI_ACTIVITY_KIND_MEMCPY, CUPTI_ACTIVITY_KIND_MEMSET};

// What the buffer callbacks fill: CUPTI calls them on its own thread.
struct Recording {
  std::mutex mutex;                  // guards totals (CUPTI's thread adds to them)
  std::atomic<bool> running{false};  // one profile at a time (start and stop: the caller's thread)
  std::map<std::string, KernelTotal> totals;
  int64_t dropped = 0;
};

Recording& recording() {
  static Recording r;
  return r;
}

std::string cupti_error(const char* call, CUptiResult result) {
  const char* text = nullptr;
  cuptiGetResultString(result, &text);
  return std::string("KernelProfile: ") + call + ": " + (text ? text : "unknown CUPTI error");
}

const char* copy_kind(uint8_t kind) {
  switch (kind) {
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOD:
      return "memcpy HtoD";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOH:
      return "memcpy DtoH";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOD:
      return "memcpy DtoD";
    default:
      return "memcpy other";
  }
}

void add(const std::string& name, const std::string& category, uint64_t start, uint64_t end) {
  KernelTotal& t = recording().totals[name];
  if (t.count == 0) {
    t.name = name;
    t.category = category;
  }
  ++t.count;
  t.seconds += end > start ? static_cast<double>(end - start) * 1e-9 : 0.0;
}

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(8, kBufferBytes));
  *size = *buffer ? kBufferBytes : 0;
  *max_records = 0;
}

void CUPTIAPI buffer_completed(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid) {
  Recording& r = recording();
  {
    std::lock_guard<std::mutex> lock(r.mutex);
    CUpti_Activity* record = nullptr;
    while (cuptiActivityGetNextRecord(buffer, valid, &record) == CUPTI_SUCCESS) {
      if (record->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) {
        const auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(record);
        const std::string name = demangle(k->name);
        add(name, kernel_category(name), k->start, k->end);
      } else if (record->kind == CUPTI_ACTIVITY_KIND_MEMCPY) {
        const auto* m = reinterpret_cast<const CUpti_ActivityMemcpy6*>(record);
        add(copy_kind(m->copyKind), "memcpy", m->start, m->end);
      } else if (record->kind == CUPTI_ACTIVITY_KIND_MEMSET) {
        const auto* m = reinterpret_cast<const CUpti_ActivityMemset4*>(record);
        add("memset", "memset", m->start, m->end);
      }
    }
  }
  std::free(buffer);
}

}  // namespace

Status KernelProfile::start() {
  Recording& r = recording();
  if (r.running.exchange(true)) return Status::invalid_argument("KernelProfile: already started");
  {
    std::lock_guard<std::mutex> lock(r.mutex);
    r.totals.clear();
  }
  static const CUptiResult kRegistered =
      cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed);
  if (kRegistered != CUPTI_SUCCESS) {
    r.running = false;
    return Status::unavailable(cupti_error("cuptiActivityRegisterCallbacks", kRegistered));
  }
  for (CUpti_ActivityKind kind : kKinds) {
    const CUptiResult result = cuptiActivityEnable(kind);
    if (result != CUPTI_SUCCESS) {
      for (CUpti_ActivityKind k : kKinds) cuptiActivityDisable(k);
      r.running = false;
      return Status::unavailable(cupti_error("cuptiActivityEnable", result));
    }
  }
  return Status::ok_status();
}

Result<std::vector<KernelTotal>> KernelProfile::stop() {
  Recording& r = recording();
  if (!r.running) return Status::invalid_argument("KernelProfile: stop() without start()");
  const CUptiResult flushed = cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  for (CUpti_ActivityKind kind : kKinds) cuptiActivityDisable(kind);
  r.running = false;
  std::lock_guard<std::mutex> lock(r.mutex);
  if (flushed != CUPTI_SUCCESS)
    return Status::internal(cupti_error("cuptiActivityFlushAll", flushed));
  std::vector<KernelTotal> out;
  for (auto& [name, total] : r.totals) out.push_back(std::move(total));
  r.totals.clear();
  return out;
}

}  // namespace dice::bench
