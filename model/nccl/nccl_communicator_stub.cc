// nccl_communicator.h in a build without NCCL (cmake/DiceNccl.cmake found none, or DICE_NCCL=OFF):
// every entry point says so, and callers fall back to checkpoint folders.
#include "model/nccl/nccl_communicator.h"

namespace dice::nccl {
namespace {

Status without_nccl(const std::string& what) {
  return Status::unavailable(what +
                             ": built without NCCL (configure with DICE_NCCL=ON and "
                             "DICE_NCCL_ROOT to enable the weight broadcast)");
}

}  // namespace

struct Communicator::Impl {};

bool built_with_nccl() {
  return false;
}

std::string describe_nccl() {
  return "built without NCCL";
}

Result<std::string> new_unique_id() {
  return without_nccl("new NCCL unique id");
}

// create() never makes one here, so the constructor is not defined in this build.
Result<std::unique_ptr<Communicator>> Communicator::create(const std::string&, int, int rank, int,
                                                           std::chrono::milliseconds) {
  return without_nccl("NCCL communicator for rank " + std::to_string(rank));
}

Communicator::~Communicator() = default;

void Communicator::abort() {}

bool Communicator::usable() const {
  return false;
}

Status Communicator::broadcast(const std::vector<DeviceBuffer>&, int, std::chrono::milliseconds) {
  return without_nccl("NCCL broadcast");
}

Status Communicator::start_all_reduce_sum(const DeviceBuffer&, void*, std::chrono::milliseconds) {
  return without_nccl("NCCL all-reduce");
}

Status Communicator::start_reduce_scatter_sum(const DeviceBuffer&, void*,
                                              std::chrono::milliseconds) {
  return without_nccl("NCCL reduce-scatter");
}

Status Communicator::start_all_gather(const DeviceBuffer&, void*, std::chrono::milliseconds) {
  return without_nccl("NCCL all-gather");
}

Status Communicator::start_in_place(InPlace, const DeviceBuffer&, void*,
                                    std::chrono::milliseconds) {
  return without_nccl("NCCL collective");
}

Status Communicator::wait_all_reduces(std::chrono::milliseconds) {
  return without_nccl("NCCL all-reduce");
}

}  // namespace dice::nccl
