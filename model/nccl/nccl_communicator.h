// A thin NCCL layer for the learner -> rollout weight broadcast: one RAII communicator and a
// broadcast of device buffers, with Status returns and deadlines everywhere, so that a peer that
// dies or never shows up costs a Timeout, never a hang.
//
//   rank 0:  id = new_unique_id()  --(sent to the others over ZeroMQ)-->  ranks 1..n-1
//   all:     Communicator::create(id, n, rank, device, timeout)   // waits for every rank
//   all:     comm->broadcast(buffers, /*root=*/0, timeout)        // same order on every rank
//
// The communicator is created non-blocking (ncclConfig_t.blocking = 0): init and every
// collective return at once and are polled (ncclCommGetAsyncError, cudaStreamQuery) until done
// or the deadline, when the communicator is aborted (ncclCommAbort) and is unusable after.
// Built without NCCL (cmake/DiceNccl.cmake found none), everything answers Unavailable("built
// without NCCL").
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "common/status.h"

namespace dice::nccl {

// Element types the weight broadcast carries.
enum class DataType { kBf16, kF16, kF32 };

// A contiguous buffer in the memory of the communicator's CUDA device.
struct DeviceBuffer {
  void* data = nullptr;
  std::size_t count = 0;  // elements, not bytes
  DataType dtype = DataType::kBf16;
};

// Size of ncclUniqueId, the rendezvous token rank 0 makes and every rank needs.
inline constexpr std::size_t kUniqueIdBytes = 128;

// Whether this build links NCCL (DICE_HAVE_NCCL).
bool built_with_nccl();

// "NCCL 2.28.9" / "built without NCCL": for start-up log lines.
std::string describe_nccl();

// A fresh ncclUniqueId as kUniqueIdBytes bytes (rank 0 only). Unavailable without NCCL; Internal
// when NCCL cannot make one (no network interface, etc.).
Result<std::string> new_unique_id();

// Short printable digest of a unique id, for logs (the id itself is binary).
std::string unique_id_digest(const std::string& unique_id);

class Communicator {
 public:
  // Joins the communicator `unique_id` as `rank` of `world_size` on CUDA device `device`, waiting
  // up to `timeout` for every other rank to join. Errors: InvalidArgument (bad rank, world size
  // or id length), Unavailable (no NCCL in this build, no CUDA device), Timeout (a peer did not
  // join; the half-made communicator is aborted), Internal (NCCL or CUDA failed: its message).
  static Result<std::unique_ptr<Communicator>> create(const std::string& unique_id, int world_size,
                                                      int rank, int device,
                                                      std::chrono::milliseconds timeout);
  ~Communicator();  // ncclCommAbort: never waits for a peer that may be gone
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;

  // Broadcasts `buffers` from `root` into the same buffers on every other rank, as one NCCL
  // group on the communicator's own stream, after the device has finished earlier work (so the
  // caller's streams need no coordination). Returns once every byte has arrived, or Timeout after
  // `timeout` (the communicator is then aborted). Every rank must pass buffers of the same counts
  // and types in the same order. Aborted when an earlier failure aborted the communicator.
  Status broadcast(const std::vector<DeviceBuffer>& buffers, int root,
                   std::chrono::milliseconds timeout);

  // Data-parallel gradients: starts summing `buffer` across ranks in place (ncclAllReduce) on the
  // communicator's own stream, after the work enqueued so far on `after_stream` (a cudaStream_t;
  // nullptr: the legacy default stream), without waiting for the device. Returns once enqueued.
  // Every rank starts the same buffers in the same order. Errors as broadcast().
  Status start_all_reduce_sum(const DeviceBuffer& buffer, void* after_stream,
                              std::chrono::milliseconds timeout);
  // Sharded optimizers (learner/parallel/optimizer_shard.h): `buffer` is world_size() equal chunks
  // (InvalidArgument otherwise). The reduce-scatter sums chunk rank() over the ranks into this
  // rank's chunk rank() (ncclReduceScatter, in place); the all-gather copies every rank's chunk r
  // into chunk r of every rank's buffer (ncclAllGather, in place). Ordered and waited for like
  // start_all_reduce_sum (wait_all_reduces waits for them too). Errors as broadcast().
  Status start_reduce_scatter_sum(const DeviceBuffer& buffer, void* after_stream,
                                  std::chrono::milliseconds timeout);
  Status start_all_gather(const DeviceBuffer& buffer, void* after_stream,
                          std::chrono::milliseconds timeout);
  // Waits until every started collective is done, or Timeout (the communicator is then aborted).
  Status wait_all_reduces(std::chrono::milliseconds timeout);

  const std::string& unique_id() const { return unique_id_; }
  int world_size() const { return world_size_; }
  int rank() const { return rank_; }
  // Aborts it now (ncclCommAbort): for a rank that fails between collectives, so that it never
  // leaves a half-done sequence behind. Only the thread that uses the communicator may call it.
  void abort();
  // False once a failure aborted it; a new unique id and communicator are needed then.
  bool usable() const;

 private:
  struct Impl;  // the NCCL and CUDA handles; defined only where NCCL is built in
  enum class InPlace { kAllReduceSum, kReduceScatterSum, kAllGather };
  Status start_in_place(InPlace what, const DeviceBuffer& buffer, void* after_stream,
                        std::chrono::milliseconds timeout);
  Communicator(std::string unique_id, int world_size, int rank, std::unique_ptr<Impl> impl);

  std::string unique_id_;
  int world_size_ = 0;
  int rank_ = 0;
  std::unique_ptr<Impl> impl_;
};

}  // namespace dice::nccl
