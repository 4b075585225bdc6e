// dice_launch_probe: the kernel check's CUPTI side (reward.kernel_check: cupti). A shared library
// that python/runner.py loads with ctypes into the candidate's process (after torch and the
// CUDA context, before the candidate's code); it is never linked into a dice executable.
//
// It holds CUPTI's one subscriber from before the candidate's code loads (attach), turns CUPTI's
// callbacks on the runtime's and the driver's kernel launch calls on between start and stop, and
// records the name of every kernel launched successfully meanwhile, with the file of the library
// that launched it: the judge counts a kernel as the candidate's own by that identity, not by a
// name anyone can copy (a dead kernel named like one of torch's). The launcher is the library of
// the host stub a runtime launch names (dladdr of its `func`) or, where the launch names no stub
// (driver-API launches, CUDA 13's <<<>>>, which passes a cudaKernel_t), the library of the
// nearest caller on the launching thread's stack that is not CUDA's own (libcuda, libcudart,
// CUPTI, this probe): a cuBLAS launch is cuBLAS's even when the candidate called cuBLAS. "?" when
// neither answers (a stack that cannot be unwound).
// torch's profiler answers the same question from CUPTI's activity API, whose first session cost
// 4.8-5.7 CPU-s per process on the H200 node; this one's cost 0.04-0.12 CPU-s (2026-11-30;
// docs/BENCHMARKS.md, "The 60 on the H200 with KernelBench in the same run", the one whose target
// is met). CUDA graph launches carry no kernel name: they are reported as kGraphLaunchLine so
// that the runner can fall back to the profiler, which sees the graph's kernels.
#include <cupti.h>
#include <cxxabi.h>
#include <dlfcn.h>
#include <execinfo.h>

#include <cstdint>
#include <cstdlib>
#include <iterator>
#include <mutex>
#include <set>
#include <string>
#include <utility>

namespace {

constexpr const char* kGraphLaunchLine = "@graph-launch";

constexpr CUpti_CallbackId kRuntimeLaunches[] = {
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000,
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_ptsz_v7000,
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060,
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_ptsz_v11060,
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_v9000,
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_ptsz_v9000,
    CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_v13000,  // CUDA 13's <<<>>> stubs
};
constexpr CUpti_CallbackId kDriverLaunches[] = {
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz,
};
constexpr CUpti_CallbackId kRuntimeGraphLaunches[] = {
    CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000,
    CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_ptsz_v10000,
};
constexpr CUpti_CallbackId kDriverGraphLaunches[] = {
    CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch,
    CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz,
};

std::mutex g_mutex;
CUpti_SubscriberHandle g_subscriber = nullptr;
// {mangled name as CUPTI gives it, file of the launching library or "?"}
std::set<std::pair<std::string, std::string>> g_names;
bool g_graph_launched = false;
std::string g_report;  // what dice_launch_probe_stop returned last

bool is_graph_launch(CUpti_CallbackDomain domain, CUpti_CallbackId id) {
  const auto& ids =
      domain == CUPTI_CB_DOMAIN_RUNTIME_API ? kRuntimeGraphLaunches : kDriverGraphLaunches;
  for (CUpti_CallbackId g : ids) {
    if (g == id) return true;
  }
  return false;
}

// The host stub a runtime launch names: the first field of cudaLaunchKernel's,
// cudaLaunchCooperativeKernel's and (the same signature) CUDA 13's __cudaLaunchKernel's parameter
// structs, the second of cudaLaunchKernelExC's (after the launch config). nullptr otherwise.
const void* launched_stub(CUpti_CallbackDomain domain, CUpti_CallbackId id,
                          const CUpti_CallbackData* data) {
  if (domain != CUPTI_CB_DOMAIN_RUNTIME_API || data->functionParams == nullptr) return nullptr;
  const auto* fields = static_cast<const void* const*>(data->functionParams);
  switch (id) {
    case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060:
    case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_ptsz_v11060:
      return fields[1];
    case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000:
    case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_ptsz_v7000:
    case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_v9000:
    case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_ptsz_v9000:
    case CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_v13000:
      return fields[0];
    default:
      return nullptr;
  }
}

// The file of the loaded library that holds `address`, or "?".
std::string library_of(const void* address) {
  Dl_info info{};
  if (address == nullptr || dladdr(address, &info) == 0 || info.dli_fname == nullptr) return "?";
  return info.dli_fname;
}

// Libraries that sit between a launching caller and this callback: CUDA's driver, runtime and
// CUPTI, and this probe. Matched on the file's base name.
bool is_cuda_stack_library(const std::string& file) {
  const std::string base = file.substr(file.rfind('/') + 1);
  for (const char* prefix : {"libcuda.so", "libcudart.so", "libcupti.so", "dice_launch_probe"}) {
    if (base.rfind(prefix, 0) == 0) return true;
  }
  return false;
}

// The library of the nearest caller on this thread's stack outside CUDA's own libraries, or "?".
std::string launching_library() {
  void* frames[64];
  const int depth = backtrace(frames, static_cast<int>(std::size(frames)));
  for (int i = 1; i < depth; ++i) {
    // A return address points after the call: step back into the calling instruction.
    const auto* pc = static_cast<const char*>(frames[i]) - 1;
    Dl_info info{};
    if (dladdr(pc, &info) == 0 || info.dli_fname == nullptr) continue;
    const std::string file = info.dli_fname;
    if (!is_cuda_stack_library(file)) return file;
  }
  return "?";
}

// Runtime and driver calls both return an int-sized enum whose 0 is success.
bool call_succeeded(const CUpti_CallbackData* data) {
  return data->functionReturnValue == nullptr ||
         *static_cast<const int*>(data->functionReturnValue) == 0;
}

void CUPTIAPI on_launch(void*, CUpti_CallbackDomain domain, CUpti_CallbackId id,
                        const void* payload) {
  const auto* data = static_cast<const CUpti_CallbackData*>(payload);
  if (data->callbackSite != CUPTI_API_EXIT || !call_succeeded(data)) return;
  if (is_graph_launch(domain, id)) {
    std::lock_guard<std::mutex> lock(g_mutex);
    g_graph_launched = true;
    return;
  }
  if (data->symbolName == nullptr || data->symbolName[0] == '\0') return;
  // Unwound outside the lock: backtrace may load libgcc_s the first time.
  std::string file = library_of(launched_stub(domain, id, data));
  if (file == "?") file = launching_library();
  std::lock_guard<std::mutex> lock(g_mutex);
  g_names.emplace(data->symbolName, std::move(file));
}

std::string demangled(const std::string& name) {
  int status = 0;
  char* text = abi::__cxa_demangle(name.c_str(), nullptr, nullptr, &status);
  std::string out = status == 0 && text != nullptr ? text : name;
  std::free(text);
  return out;
}

// Turns the launch callbacks on or off (the subscription stays).
CUptiResult enable_callbacks(CUpti_SubscriberHandle subscriber, uint32_t on) {
  const struct {
    CUpti_CallbackDomain domain;
    const CUpti_CallbackId* ids;
    size_t count;
  } groups[] = {
      {CUPTI_CB_DOMAIN_RUNTIME_API, kRuntimeLaunches, std::size(kRuntimeLaunches)},
      {CUPTI_CB_DOMAIN_DRIVER_API, kDriverLaunches, std::size(kDriverLaunches)},
      {CUPTI_CB_DOMAIN_RUNTIME_API, kRuntimeGraphLaunches, std::size(kRuntimeGraphLaunches)},
      {CUPTI_CB_DOMAIN_DRIVER_API, kDriverGraphLaunches, std::size(kDriverGraphLaunches)},
  };
  for (const auto& group : groups) {
    for (size_t i = 0; i < group.count; ++i) {
      const CUptiResult r = cuptiEnableCallback(on, subscriber, group.domain, group.ids[i]);
      if (r != CUPTI_SUCCESS) return r;
    }
  }
  return CUPTI_SUCCESS;
}

}  // namespace

// Takes CUPTI's one subscriber for this process, with no callback on yet: the runner attaches
// before any candidate code runs, so a candidate cannot take the subscriber first and leave the
// kernel check without one. 0 on success (or when attached already), else the CUptiResult
// (CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED: another tool holds it).
extern "C" __attribute__((visibility("default"))) int dice_launch_probe_attach() {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (g_subscriber != nullptr) return 0;
  const CUptiResult r =
      cuptiSubscribe(&g_subscriber, reinterpret_cast<CUpti_CallbackFunc>(on_launch), nullptr);
  if (r != CUPTI_SUCCESS) g_subscriber = nullptr;
  return static_cast<int>(r);
}

// Gives the subscriber back (for torch's profiler, which needs it). 0 on success.
extern "C" __attribute__((visibility("default"))) int dice_launch_probe_detach() {
  CUpti_SubscriberHandle subscriber;
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    subscriber = g_subscriber;
    g_subscriber = nullptr;
  }
  return subscriber == nullptr ? 0 : static_cast<int>(cuptiUnsubscribe(subscriber));
}

// Starts recording the launches (attaching first if needed); 0 on success, else the CUptiResult.
// The callbacks are on only between start and stop, so timed runs pay nothing for them.
extern "C" __attribute__((visibility("default"))) int dice_launch_probe_start() {
  const int attached = dice_launch_probe_attach();
  if (attached != 0) return attached;
  CUpti_SubscriberHandle subscriber;
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    g_names.clear();
    g_graph_launched = false;
    subscriber = g_subscriber;
  }
  // Outside the lock: a callback on another thread may be waiting for it.
  const CUptiResult r = enable_callbacks(subscriber, 1);
  if (r != CUPTI_SUCCESS) enable_callbacks(subscriber, 0);
  return static_cast<int>(r);
}

// Stops recording and returns the kernels launched since start, one per line as "demangled
// name<TAB>library file" ("?" when unknown), plus a line kGraphLaunchLine when a CUDA graph was
// launched. Valid until the next call.
extern "C" __attribute__((visibility("default"))) const char* dice_launch_probe_stop() {
  CUpti_SubscriberHandle subscriber;
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    subscriber = g_subscriber;
  }
  // Callbacks run on the launching threads and take g_mutex: turned off outside it.
  if (subscriber != nullptr) enable_callbacks(subscriber, 0);
  std::lock_guard<std::mutex> lock(g_mutex);
  g_report.clear();
  for (const auto& [name, file] : g_names) g_report += demangled(name) + "\t" + file + "\n";
  if (g_graph_launched) g_report += std::string(kGraphLaunchLine) + "\n";
  return g_report.c_str();
}
