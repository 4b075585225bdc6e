#include "model/device_memory.h"

#include <dlfcn.h>

#include <string>

namespace dice {
namespace {

// The few driver API entry points used, declared by hand (cuda.h is not needed to build): CUresult
// is an int enum, CUdevice an int, CUcontext an opaque pointer.
using CuInit = int (*)(unsigned int);
using CuDeviceGet = int (*)(int*, int);
using CuPrimaryCtxRetain = int (*)(void**, int);
using CuPrimaryCtxRelease = int (*)(int);
using CuCtxPushCurrent = int (*)(void*);
using CuCtxPopCurrent = int (*)(void**);
using CuMemGetInfo = int (*)(std::size_t*, std::size_t*);

struct Driver {
  CuInit init = nullptr;
  CuDeviceGet device_get = nullptr;
  CuPrimaryCtxRetain retain = nullptr;
  CuPrimaryCtxRelease release = nullptr;
  CuCtxPushCurrent push = nullptr;
  CuCtxPopCurrent pop = nullptr;
  CuMemGetInfo mem_get_info = nullptr;
  std::string error;  // why the driver is unusable; empty when every entry point was found
};

template <class F>
void find(void* library, const char* name, F& out, std::string& error) {
  out = reinterpret_cast<F>(dlsym(library, name));
  if (out == nullptr && error.empty()) error = std::string("libcuda.so.1 has no ") + name;
}

// Opened once; never closed (the driver stays loaded for the process's life anyway).
const Driver& driver() {
  static const Driver kDriver = [] {
    Driver out;
    void* library = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (library == nullptr) {
      out.error = std::string("no CUDA driver: ") + dlerror();
      return out;
    }
    find(library, "cuInit", out.init, out.error);
    find(library, "cuDeviceGet", out.device_get, out.error);
    find(library, "cuDevicePrimaryCtxRetain", out.retain, out.error);
    find(library, "cuDevicePrimaryCtxRelease_v2", out.release, out.error);
    find(library, "cuCtxPushCurrent_v2", out.push, out.error);
    find(library, "cuCtxPopCurrent_v2", out.pop, out.error);
    find(library, "cuMemGetInfo_v2", out.mem_get_info, out.error);
    return out;
  }();
  return kDriver;
}

Status driver_error(const char* call, int code, int ordinal) {
  return Status::unavailable(std::string("CUDA driver: ") + call + " failed with error " +
                             std::to_string(code) + " for device " + std::to_string(ordinal));
}

}  // namespace

Result<DeviceMemory> cuda_device_memory(int ordinal) {
  const Driver& d = driver();
  if (!d.error.empty()) return Status::unavailable(d.error);
  if (int rc = d.init(0); rc != 0) return driver_error("cuInit", rc, ordinal);
  int device = 0;
  if (int rc = d.device_get(&device, ordinal); rc != 0) {
    return driver_error("cuDeviceGet", rc, ordinal);
  }
  void* context = nullptr;
  if (int rc = d.retain(&context, device); rc != 0) {
    return driver_error("cuDevicePrimaryCtxRetain", rc, ordinal);
  }
  DeviceMemory memory;
  const char* failed = "cuCtxPushCurrent";
  int rc = d.push(context);
  if (rc == 0) {
    failed = "cuMemGetInfo";
    std::size_t free_bytes = 0, total_bytes = 0;
    rc = d.mem_get_info(&free_bytes, &total_bytes);
    memory = {free_bytes, total_bytes};
    void* popped = nullptr;
    d.pop(&popped);
  }
  d.release(device);
  if (rc != 0) return driver_error(failed, rc, ordinal);
  return memory;
}

}  // namespace dice
