// dice_guard_alloc.so: the GuardArena (guard_arena.h) as PyTorch's CUDA allocator in the
// candidate's process. runner.py hands dice_guard_malloc and dice_guard_free to
// torch.cuda.memory.CUDAPluggableAllocator before any CUDA memory exists, and calls the rest
// through ctypes (python/guard_memory.py). It is never linked into a dice executable.
//
// The CUDA driver is opened at run time (dlopen of libcuda.so.1), so the module builds on
// machines without CUDA (CI) and does nothing there but say so (dice_guard_status).
#include <dlfcn.h>
#include <sys/random.h>
#include <sys/types.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "reward/evaluate/guard/guard_arena.h"

namespace {

// The driver API's types and the entry points used, as cuda.h declares them (CUresult is an
// enum of int size; CUdeviceptr an unsigned 64-bit integer on 64-bit hosts).
using CuResult = int;
using CuDevicePtr = unsigned long long;  // NOLINT(google-runtime-int): the driver's own type
using CuContext = void*;

struct Driver {
  CuResult (*init)(unsigned int) = nullptr;
  CuResult (*mem_alloc)(CuDevicePtr*, size_t) = nullptr;
  CuResult (*memset_d8_async)(CuDevicePtr, unsigned char, size_t, void*) = nullptr;
  CuResult (*memset_d32_async)(CuDevicePtr, unsigned int, size_t, void*) = nullptr;
  CuResult (*memcpy_dtoh)(void*, CuDevicePtr, size_t) = nullptr;
  CuResult (*ctx_synchronize)() = nullptr;
  CuResult (*ctx_get_current)(CuContext*) = nullptr;
  CuResult (*ctx_set_current)(CuContext) = nullptr;
  CuResult (*device_get)(int*, int) = nullptr;
  CuResult (*primary_ctx_retain)(CuContext*, int) = nullptr;
  CuResult (*get_error_string)(CuResult, const char**) = nullptr;
};

template <typename F>
bool bind(void* lib, const char* name, F* out, std::string* missing) {
  *out = reinterpret_cast<F>(dlsym(lib, name));
  if (*out == nullptr) *missing += std::string(missing->empty() ? "" : ", ") + name;
  return *out != nullptr;
}

// Loads the driver once; "" on success, else why not.
std::string load_driver(Driver* d) {
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) return std::string("cannot open libcuda.so.1: ") + dlerror();
  std::string missing;
  bind(lib, "cuInit", &d->init, &missing);
  bind(lib, "cuMemAlloc_v2", &d->mem_alloc, &missing);
  bind(lib, "cuMemsetD8Async", &d->memset_d8_async, &missing);
  bind(lib, "cuMemsetD32Async", &d->memset_d32_async, &missing);
  bind(lib, "cuMemcpyDtoH_v2", &d->memcpy_dtoh, &missing);
  bind(lib, "cuCtxSynchronize", &d->ctx_synchronize, &missing);
  bind(lib, "cuCtxGetCurrent", &d->ctx_get_current, &missing);
  bind(lib, "cuCtxSetCurrent", &d->ctx_set_current, &missing);
  bind(lib, "cuDeviceGet", &d->device_get, &missing);
  bind(lib, "cuDevicePrimaryCtxRetain", &d->primary_ctx_retain, &missing);
  bind(lib, "cuGetErrorString", &d->get_error_string, &missing);
  if (!missing.empty()) return "libcuda.so.1 lacks " + missing;
  const CuResult rc = d->init(0);
  if (rc != 0) return "cuInit failed (CUresult " + std::to_string(rc) + ")";
  return "";
}

class DriverMemory : public dice::GuardDeviceMemory {
 public:
  explicit DriverMemory(const Driver* d) : d_(d) {}

  uint64_t reserve(size_t bytes) override {
    CuDevicePtr p = 0;
    return ok(d_->mem_alloc(&p, bytes), "cuMemAlloc") ? p : 0;
  }

  // Bytes up to the first 4-aligned address, words over the middle, bytes after.
  bool fill(uint64_t address, unsigned char value, size_t bytes, void* stream) override {
    const size_t head = std::min<size_t>(bytes, (4 - address % 4) % 4);
    const size_t words = (bytes - head) / 4;
    const size_t tail = bytes - head - words * 4;
    const unsigned int word = value * 0x01010101u;
    return (head == 0 || ok(d_->memset_d8_async(address, value, head, stream), "cuMemsetD8")) &&
           (words == 0 ||
            ok(d_->memset_d32_async(address + head, word, words, stream), "cuMemsetD32")) &&
           (tail == 0 ||
            ok(d_->memset_d8_async(address + head + words * 4, value, tail, stream), "cuMemsetD8"));
  }

  bool synchronize() override { return ok(d_->ctx_synchronize(), "cuCtxSynchronize"); }

  bool read(uint64_t address, size_t bytes, unsigned char* out) override {
    return ok(d_->memcpy_dtoh(out, address, bytes), "cuMemcpyDtoH");
  }

  std::string error() const override { return error_; }

 private:
  bool ok(CuResult rc, const char* what) {
    if (rc == 0) return true;
    const char* text = nullptr;
    d_->get_error_string(rc, &text);
    error_ = std::string(what) + ": " + (text != nullptr ? text : "CUresult " + std::to_string(rc));
    return false;
  }

  const Driver* d_;
  std::string error_;
};

struct State {
  std::mutex mutex;
  bool loaded = false;
  std::string load_error;
  Driver driver;
  std::unique_ptr<DriverMemory> memory;
  std::map<int, std::unique_ptr<dice::GuardArena>> arenas;  // by device index
  bool watching = true;
  std::string report;  // what dice_guard_check returned last
};

State& state() {
  static State* s = new State();  // never destroyed: PyTorch frees tensors at exit
  return *s;
}

uint64_t random_seed() {
  uint64_t seed = 0;
  if (getrandom(&seed, sizeof(seed), 0) != static_cast<ssize_t>(sizeof(seed))) seed = 1;
  return seed;
}

// Loads the driver on first use; whether it is there (s.load_error says why not). Called with
// s.mutex held.
bool ensure_driver(State& s) {
  if (!s.loaded) {
    s.loaded = true;
    s.load_error = load_driver(&s.driver);
    if (s.load_error.empty()) s.memory = std::make_unique<DriverMemory>(&s.driver);
  }
  return s.load_error.empty();
}

// The arena of `device` with a context current; nullptr without a driver or context. Called
// with s.mutex held.
dice::GuardArena* arena_for(State& s, int device) {
  if (!ensure_driver(s)) return nullptr;
  CuContext current = nullptr;
  if (s.driver.ctx_get_current(&current) != 0 || current == nullptr) {
    int handle = 0;
    CuContext primary = nullptr;
    if (s.driver.device_get(&handle, device) != 0 ||
        s.driver.primary_ctx_retain(&primary, handle) != 0 ||
        s.driver.ctx_set_current(primary) != 0) {
      return nullptr;
    }
  }
  auto& arena = s.arenas[device];
  if (!arena) {
    dice::GuardArenaOptions options;
    options.seed = random_seed();
    arena = std::make_unique<dice::GuardArena>(s.memory.get(), options);
    arena->set_watching(s.watching);
  }
  return arena.get();
}

}  // namespace

// PyTorch's CUDAPluggableAllocator entry points.
extern "C" __attribute__((visibility("default"))) void* dice_guard_malloc(size_t size, int device,
                                                                          void* stream) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  dice::GuardArena* arena = arena_for(s, device);
  return arena == nullptr ? nullptr
                          : reinterpret_cast<void*>(arena->allocate(size, stream));  // NOLINT
}

extern "C" __attribute__((visibility("default"))) void dice_guard_free(void* ptr, size_t /*size*/,
                                                                       int device,
                                                                       void* /*stream*/) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  auto it = s.arenas.find(device);
  if (it != s.arenas.end()) it->second->release(reinterpret_cast<uint64_t>(ptr));  // NOLINT
}

// "ok" once the driver loaded (loading it if nothing has yet), else why it cannot.
extern "C" __attribute__((visibility("default"))) const char* dice_guard_status() {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  s.report = ensure_driver(s) ? "ok" : s.load_error;
  return s.report.c_str();
}

// Watching on (1) or off (0) for every device; returns the previous state.
extern "C" __attribute__((visibility("default"))) int dice_guard_watch(int on) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  const bool was = s.watching;
  s.watching = on != 0;
  for (auto& [device, arena] : s.arenas) arena->set_watching(s.watching);
  return was ? 1 : 0;
}

// Checks every device's arena. Text, one line each: "ok" or "error <why>" first, then per
// violation "<device> <address> <size> <live 0|1> <bytes before> <bytes after> <reach after>".
// Formatted with snprintf, not iostreams: this module lives in the candidate's process beside
// whatever libstdc++ PyTorch brought, and ostream's number formatting through that library's
// locale facets crashed on the H200 node (2026-12-02; docs/BENCHMARKS.md, "Guard bytes around
// every tensor").
extern "C" __attribute__((visibility("default"))) const char* dice_guard_check() {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  std::string error = s.load_error;
  std::string lines;
  for (auto& [device, arena] : s.arenas) {
    const dice::GuardCheck c = arena->check();
    if (error.empty() && !c.error.empty()) error = c.error;
    for (const auto& v : c.violations) {
      char line[160];
      std::snprintf(line, sizeof(line), "%d %llu %zu %d %zu %zu %zu\n", device,
                    static_cast<unsigned long long>(v.address), v.size, v.live ? 1 : 0,  // NOLINT
                    v.bytes_before, v.bytes_after, v.reach_after);
      lines += line;
    }
  }
  s.report = (error.empty() ? "ok" : "error " + error) + "\n" + lines;
  return s.report.c_str();
}
