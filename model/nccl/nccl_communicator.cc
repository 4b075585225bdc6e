// NCCL and the CUDA runtime behind nccl_communicator.h (built only when DICE_HAVE_NCCL).
#include "model/nccl/nccl_communicator.h"

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <cstring>
#include <thread>

#include "common/log.h"

namespace dice::nccl {
namespace {

using Clock = std::chrono::steady_clock;

static_assert(sizeof(ncclUniqueId) == kUniqueIdBytes, "ncclUniqueId changed size");

// Between two looks at an operation in flight: short next to a broadcast (~0.1-0.5 s), long
// enough not to spin a core.
constexpr auto kPollInterval = std::chrono::microseconds(200);

std::string nccl_error(ncclResult_t result, ncclComm_t comm) {
  std::string out = ncclGetErrorString(result);
  const char* last = ncclGetLastError(comm);
  if (last != nullptr && last[0] != '\0') out += std::string(" (") + last + ")";
  return out;
}

Status cuda_check(cudaError_t error, const std::string& what) {
  if (error == cudaSuccess) return Status::ok_status();
  return Status::internal(what + ": " + cudaGetErrorString(error));
}

ncclDataType_t to_nccl(DataType dtype) {
  switch (dtype) {
    case DataType::kF16:
      return ncclFloat16;
    case DataType::kF32:
      return ncclFloat32;
    case DataType::kBf16:
      break;
  }
  return ncclBfloat16;
}

std::size_t element_bytes(DataType dtype) {
  return dtype == DataType::kF32 ? 4 : 2;
}

// Waits until the non-blocking communicator has no operation in progress. The error NCCL
// reports, else Timeout at `deadline`.
Status wait_idle(ncclComm_t comm, Clock::time_point deadline, const std::string& what) {
  while (true) {
    ncclResult_t state = ncclInProgress;
    ncclResult_t asked = ncclCommGetAsyncError(comm, &state);
    if (asked != ncclSuccess) return Status::internal(what + ": " + nccl_error(asked, comm));
    if (state == ncclSuccess) return Status::ok_status();
    if (state != ncclInProgress) return Status::internal(what + ": " + nccl_error(state, comm));
    if (Clock::now() >= deadline) return Status::timeout(what + ": deadline passed");
    std::this_thread::sleep_for(kPollInterval);
  }
}

// Waits until the kernels enqueued on `stream` are done. A dead peer leaves NCCL's kernels
// spinning, which only the deadline (and the caller's ncclCommAbort) end.
Status wait_stream(ncclComm_t comm, cudaStream_t stream, Clock::time_point deadline,
                   const std::string& what) {
  while (true) {
    cudaError_t done = cudaStreamQuery(stream);
    if (done == cudaSuccess) return Status::ok_status();
    if (done != cudaErrorNotReady) return cuda_check(done, what + ": stream");
    ncclResult_t state = ncclSuccess;
    if (ncclCommGetAsyncError(comm, &state) == ncclSuccess && state != ncclSuccess &&
        state != ncclInProgress) {
      return Status::internal(what + ": " + nccl_error(state, comm));
    }
    if (Clock::now() >= deadline) return Status::timeout(what);
    std::this_thread::sleep_for(kPollInterval);
  }
}

}  // namespace

struct Communicator::Impl {
  ncclComm_t comm = nullptr;
  cudaStream_t stream = nullptr;
  int device = 0;
  bool aborted = false;

  // Aborts the communicator: pending kernels are killed, no peer is waited for.
  void abort() {
    if (comm != nullptr && !aborted) ncclCommAbort(comm);
    aborted = true;
  }
  ~Impl() {
    abort();
    if (stream != nullptr) cudaStreamDestroy(stream);
  }
};

bool built_with_nccl() {
  return true;
}

std::string describe_nccl() {
  int version = 0;
  if (ncclGetVersion(&version) != ncclSuccess) return "NCCL (version unknown)";
  // NCCL >= 2.9 encodes versions as major * 10000 + minor * 100 + patch.
  return "NCCL " + std::to_string(version / 10000) + "." + std::to_string(version / 100 % 100) +
         "." + std::to_string(version % 100);
}

Result<std::string> new_unique_id() {
  ncclUniqueId id;
  ncclResult_t result = ncclGetUniqueId(&id);
  if (result != ncclSuccess) {
    return Status::internal(std::string("ncclGetUniqueId: ") + ncclGetErrorString(result));
  }
  return std::string(id.internal, sizeof(id.internal));
}

Result<std::unique_ptr<Communicator>> Communicator::create(const std::string& unique_id,
                                                           int world_size, int rank, int device,
                                                           std::chrono::milliseconds timeout) {
  const std::string who = "NCCL rank " + std::to_string(rank) + " of " +
                          std::to_string(world_size) + " (id " + unique_id_digest(unique_id) + ")";
  if (unique_id.size() != kUniqueIdBytes) {
    return Status::invalid_argument(who + ": unique id has " + std::to_string(unique_id.size()) +
                                    " bytes, want " + std::to_string(kUniqueIdBytes));
  }
  if (world_size < 2 || rank < 0 || rank >= world_size) {
    return Status::invalid_argument(who + ": rank must be in [0, world size), world size >= 2");
  }
  int devices = 0;
  cudaError_t counted = cudaGetDeviceCount(&devices);
  if (counted != cudaSuccess || device < 0 || device >= devices) {
    return Status::unavailable(
        who + ": no CUDA device " + std::to_string(device) + " (" + std::to_string(devices) +
        " visible" +
        (counted != cudaSuccess ? std::string(", ") + cudaGetErrorString(counted) : std::string()) +
        ")");
  }
  DICE_RETURN_IF_ERROR(cuda_check(cudaSetDevice(device), who + ": cudaSetDevice"));
  auto impl = std::make_unique<Impl>();
  impl->device = device;
  DICE_RETURN_IF_ERROR(cuda_check(cudaStreamCreateWithFlags(&impl->stream, cudaStreamNonBlocking),
                                  who + ": cudaStreamCreate"));
  ncclUniqueId id;
  std::memcpy(id.internal, unique_id.data(), kUniqueIdBytes);
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;  // return at once; wait_idle polls with our deadline
  const auto deadline = Clock::now() + timeout;
  ncclResult_t started = ncclCommInitRankConfig(&impl->comm, world_size, id, rank, &config);
  if (started != ncclSuccess && started != ncclInProgress) {
    return Status::internal(who + ": ncclCommInitRankConfig: " + nccl_error(started, impl->comm));
  }
  Status ready = wait_idle(impl->comm, deadline, who + ": communicator init");
  if (!ready.ok()) {
    impl->abort();
    if (ready.code() == StatusCode::kTimeout) {
      return Status::timeout(who + ": not every rank joined within " +
                             std::to_string(timeout.count()) + " ms; aborted");
    }
    return ready;
  }
  return std::unique_ptr<Communicator>(
      new Communicator(unique_id, world_size, rank, std::move(impl)));
}

Communicator::Communicator(std::string unique_id, int world_size, int rank,
                           std::unique_ptr<Impl> impl)
    : unique_id_(std::move(unique_id)),
      world_size_(world_size),
      rank_(rank),
      impl_(std::move(impl)) {}

Communicator::~Communicator() = default;

void Communicator::abort() {
  if (impl_ != nullptr) impl_->abort();
}

bool Communicator::usable() const {
  return impl_ != nullptr && !impl_->aborted;
}

Status Communicator::broadcast(const std::vector<DeviceBuffer>& buffers, int root,
                               std::chrono::milliseconds timeout) {
  const std::string who = "NCCL broadcast from rank " + std::to_string(root) + " at rank " +
                          std::to_string(rank_) + " of " + std::to_string(world_size_) + " (" +
                          std::to_string(buffers.size()) + " tensors)";
  if (!usable())
    return Status::aborted(who + ": the communicator was aborted by an earlier failure");
  if (root < 0 || root >= world_size_) return Status::invalid_argument(who + ": bad root");
  Impl& impl = *impl_;
  DICE_RETURN_IF_ERROR(cuda_check(cudaSetDevice(impl.device), who + ": cudaSetDevice"));
  // The buffers were written on the caller's streams (an optimizer step, a cast): let that work
  // finish so our stream reads (or overwrites) final values. Once per push, so cheap enough.
  DICE_RETURN_IF_ERROR(cuda_check(cudaDeviceSynchronize(), who + ": earlier device work failed"));
  const auto deadline = Clock::now() + timeout;
  auto fail = [&](Status status) {
    impl.abort();
    return status.code() == StatusCode::kTimeout
               ? Status::timeout(who + ": not finished within " + std::to_string(timeout.count()) +
                                 " ms (a peer died or stalled); communicator aborted")
               : status;
  };
  ncclResult_t grouped = ncclGroupStart();
  for (std::size_t i = 0; grouped == ncclSuccess && i < buffers.size(); ++i) {
    const DeviceBuffer& b = buffers[i];
    grouped =
        ncclBroadcast(b.data, b.data, b.count, to_nccl(b.dtype), root, impl.comm, impl.stream);
  }
  ncclResult_t ended = ncclGroupEnd();  // always closes the group, even after a failed enqueue
  if (grouped != ncclSuccess && grouped != ncclInProgress) {
    return fail(Status::internal(who + ": ncclBroadcast: " + nccl_error(grouped, impl.comm)));
  }
  if (ended != ncclSuccess && ended != ncclInProgress) {
    return fail(Status::internal(who + ": ncclGroupEnd: " + nccl_error(ended, impl.comm)));
  }
  Status enqueued = wait_idle(impl.comm, deadline, who);
  if (!enqueued.ok()) return fail(enqueued);
  Status done = wait_stream(impl.comm, impl.stream, deadline, who);
  return done.ok() ? done : fail(done);
}

Status Communicator::start_all_reduce_sum(const DeviceBuffer& buffer, void* after_stream,
                                          std::chrono::milliseconds timeout) {
  return start_in_place(InPlace::kAllReduceSum, buffer, after_stream, timeout);
}

Status Communicator::start_reduce_scatter_sum(const DeviceBuffer& buffer, void* after_stream,
                                              std::chrono::milliseconds timeout) {
  return start_in_place(InPlace::kReduceScatterSum, buffer, after_stream, timeout);
}

Status Communicator::start_all_gather(const DeviceBuffer& buffer, void* after_stream,
                                      std::chrono::milliseconds timeout) {
  return start_in_place(InPlace::kAllGather, buffer, after_stream, timeout);
}

Status Communicator::start_in_place(InPlace what, const DeviceBuffer& buffer, void* after_stream,
                                    std::chrono::milliseconds timeout) {
  const char* name = what == InPlace::kAllReduceSum       ? "all-reduce"
                     : what == InPlace::kReduceScatterSum ? "reduce-scatter"
                                                          : "all-gather";
  const std::string who = std::string("NCCL ") + name + " of " + std::to_string(buffer.count) +
                          " elements at rank " + std::to_string(rank_) + " of " +
                          std::to_string(world_size_);
  if (!usable())
    return Status::aborted(who + ": the communicator was aborted by an earlier failure");
  const auto ranks = static_cast<std::size_t>(world_size_);
  if (what != InPlace::kAllReduceSum && buffer.count % ranks != 0) {
    return Status::invalid_argument(who + ": not " + std::to_string(world_size_) + " equal chunks");
  }
  Impl& impl = *impl_;
  DICE_RETURN_IF_ERROR(cuda_check(cudaSetDevice(impl.device), who + ": cudaSetDevice"));
  // Our stream waits for the gradients the caller's stream is still producing; the host does not.
  cudaEvent_t produced = nullptr;
  DICE_RETURN_IF_ERROR(cuda_check(cudaEventCreateWithFlags(&produced, cudaEventDisableTiming),
                                  who + ": cudaEventCreate"));
  Status ordered = cuda_check(cudaEventRecord(produced, static_cast<cudaStream_t>(after_stream)),
                              who + ": cudaEventRecord");
  if (ordered.ok()) {
    ordered = cuda_check(cudaStreamWaitEvent(impl.stream, produced, 0), who + ": cudaStreamWait");
  }
  cudaEventDestroy(produced);  // the wait is enqueued; the event may go
  DICE_RETURN_IF_ERROR(ordered);
  const auto deadline = Clock::now() + timeout;
  const std::size_t chunk = buffer.count / ranks;
  // In place as NCCL defines it: this rank's chunk of the whole buffer is the receive buffer of
  // the reduce-scatter and the send buffer of the all-gather.
  char* own = static_cast<char*>(buffer.data) +
              static_cast<std::size_t>(rank_) * chunk * element_bytes(buffer.dtype);
  ncclResult_t started = ncclSuccess;
  switch (what) {
    case InPlace::kAllReduceSum:
      started = ncclAllReduce(buffer.data, buffer.data, buffer.count, to_nccl(buffer.dtype),
                              ncclSum, impl.comm, impl.stream);
      break;
    case InPlace::kReduceScatterSum:
      started = ncclReduceScatter(buffer.data, own, chunk, to_nccl(buffer.dtype), ncclSum,
                                  impl.comm, impl.stream);
      break;
    case InPlace::kAllGather:
      started =
          ncclAllGather(own, buffer.data, chunk, to_nccl(buffer.dtype), impl.comm, impl.stream);
      break;
  }
  if (started != ncclSuccess && started != ncclInProgress) {
    impl.abort();
    const char* call = what == InPlace::kAllReduceSum       ? "ncclAllReduce"
                       : what == InPlace::kReduceScatterSum ? "ncclReduceScatter"
                                                            : "ncclAllGather";
    return Status::internal(who + ": " + call + ": " + nccl_error(started, impl.comm));
  }
  Status enqueued = wait_idle(impl.comm, deadline, who);
  if (!enqueued.ok()) impl.abort();
  return enqueued;
}

Status Communicator::wait_all_reduces(std::chrono::milliseconds timeout) {
  const std::string who =
      "NCCL all-reduces at rank " + std::to_string(rank_) + " of " + std::to_string(world_size_);
  if (!usable())
    return Status::aborted(who + ": the communicator was aborted by an earlier failure");
  Status done = wait_stream(impl_->comm, impl_->stream, Clock::now() + timeout, who);
  if (!done.ok()) impl_->abort();
  return done;
}

}  // namespace dice::nccl
